"""`fairway submit --port` declares the ports each pod serves; `fairway describe` prints
where to open them."""

from __future__ import annotations

import json

import pytest

from tests.proxy.conftest import running_with_port

pytestmark = pytest.mark.django_db(transaction=True)


def test_submit_declares_ports_and_refuses_bad_names(fairway, cluster):
    done = fairway(
        "submit", "nb", "--project", "vision", "--gpus", "1", "--port", "lab", "--port", "tb",
        "--json", "--", "sh", "-c", "serve",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["spec"]["ports"] == [
        {"name": "lab", "protocol": "http"},
        {"name": "tb", "protocol": "http"},
    ]
    bad = fairway("submit", "nb2", "--project", "vision", "--gpus", "1", "--port", "Lab_1")
    assert bad.returncode == 1
    assert "spec.ports[0].name" in bad.stderr and "lowercase letters" in bad.stderr
    twice = fairway("submit", "nb3", "--project", "vision", "--gpus", "1", "--port", "a",
                    "--port", "a")  # fmt: skip
    assert twice.returncode == 1 and "port name 'a' is used twice" in twice.stderr


def test_describe_prints_the_url_of_each_open_port(fairway, cluster, live_server):
    workload = running_with_port(cluster, port=41234)
    shown = fairway("describe", str(workload.pk))
    assert shown.returncode == 0, shown.stderr
    assert f"{live_server.url}/proxy/{workload.pk}/main-0/web/" in shown.stdout
    assert "Open (in a browser signed in to Fairway):" in shown.stdout
