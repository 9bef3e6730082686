"""Whether a node offers containers: only a runtime that answers counts."""

from fairway_agent.containers import find_runtime


def test_a_docker_client_without_a_daemon_is_no_runtime():
    paths = {"docker": "/usr/bin/docker", "podman": None}
    assert find_runtime(paths.get, works=lambda path: False) is None


def test_podman_serves_when_docker_does_not_answer():
    paths = {"docker": "/usr/bin/docker", "podman": "/usr/bin/podman"}
    assert find_runtime(paths.get, works=lambda path: path.endswith("podman")) == "/usr/bin/podman"


def test_a_runtime_that_answers_is_used():
    assert (
        find_runtime({"docker": "/usr/bin/docker"}.get, works=lambda p: True) == "/usr/bin/docker"
    )
