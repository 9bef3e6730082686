"""`fairway logs` against the logs endpoint as docs/agent.md specifies it ("Logs and
usage"), with a stand-in for the server: the endpoint is built on another branch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fairway_cli.client import ApiClient
from fairway_cli.config import Settings
from fairway_cli.errors import ApiError, CliError
from fairway_cli.main import build_parser

Answer = Callable[[dict[str, Any]], Any]


class StandInServer(ApiClient):
    """Answers GETs from a table of path -> function of the query; records each call."""

    def __init__(self, routes: dict[str, Answer]) -> None:
        super().__init__(Settings(url="http://fairway.test", token="fw_test"))
        self.routes = routes
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def get(self, path: str, params: Any = None) -> Any:
        self.calls.append((path, dict(params or {})))
        return self.routes[path](dict(params or {}))


def workload(status: str, pods: tuple[str, ...] = ("main-0",)) -> dict[str, Any]:
    placements = [
        {"group": p.rsplit("-", 1)[0], "pod_index": int(p.rsplit("-", 1)[1]), "node": "gpu-1"}
        for p in pods
    ]
    return {"id": 7, "name": "bert", "project": "nlp", "status": status, "placements": placements}


def pod(name: str, text: str, start: int, run: int = 1) -> dict[str, Any]:
    return {
        "pod": name,
        "run": run,
        "node": "gpu-1",
        "offset": start,
        "next_offset": start + len(text.encode()),
        "text": text,
        "state": "running",
        "exit_code": None,
    }


def fairway_logs(server: StandInServer, *args: str) -> int:
    parsed = build_parser().parse_args(["logs", *args])
    return int(parsed.handler(parsed, server))


def test_every_pod_is_printed_with_its_name_in_front_of_each_line(capsys):
    server = StandInServer(
        {
            "workloads/7/": lambda q: workload("running", ("main-0", "main-1")),
            "workloads/7/logs/": lambda q: {
                "pods": [pod("main-0", "step 1\nstep 2\n", 0), pod("main-1", "ready\npart", 0)]
            },
        }
    )
    assert fairway_logs(server, "7", "--tail", "50") == 0
    assert (
        capsys.readouterr().out == "[main-0] step 1\n[main-0] step 2\n[main-1] ready\n[main-1] part"
    )
    assert server.calls[-1] == ("workloads/7/logs/", {"tail": 50})


def test_one_pod_is_printed_as_it_wrote_it(capsys):
    server = StandInServer(
        {
            "workloads/7/": lambda q: workload("running"),
            "workloads/7/logs/": lambda q: {"pods": [pod("main-0", "loss 0.1\n", 0)]},
        }
    )
    assert fairway_logs(server, "7", "--pod", "main-0") == 0
    assert capsys.readouterr().out == "loss 0.1\n"
    assert server.calls[-1] == ("workloads/7/logs/", {"pod": "main-0"})


def test_follow_asks_from_the_last_offset_until_the_workload_is_finished(capsys):
    statuses = iter(["running", "running", "completed"])
    by_offset = {0: "epoch 1\n", 8: "epoch 2\nepoch 3\n", 24: "done\n"}
    server = StandInServer(
        {
            "workloads/7/": lambda q: workload(next(statuses)),
            "workloads/7/logs/": lambda q: {
                "pods": [pod("main-0", by_offset[q.get("since", 0)], q.get("since", 0))]
            },
        }
    )
    assert fairway_logs(server, "7", "-f", "--interval", "0") == 0
    assert capsys.readouterr().out == "epoch 1\nepoch 2\nepoch 3\ndone\n"
    sinces = [q.get("since") for path, q in server.calls if path.endswith("logs/")]
    assert sinces == [None, 8, 24]  # the last after it finished: its final words


def test_a_pod_restarted_in_a_new_run_is_printed_from_its_start(capsys):
    answers = iter(
        [
            {"pods": [pod("main-0", "first run\n", 0, run=1)]},
            {"pods": [pod("main-0", "", 0, run=2)]},  # since=10 is past the new run's end
            {"pods": [pod("main-0", "second run\n", 0, run=2)]},
        ]
    )
    statuses = iter(["running", "failed"])
    server = StandInServer(
        {
            "workloads/7/": lambda q: workload(next(statuses, "failed")),
            "workloads/7/logs/": lambda q: next(answers),
        }
    )
    assert fairway_logs(server, "7", "-f", "--interval", "0") == 0
    captured = capsys.readouterr()
    assert captured.out == "first run\nsecond run\n"
    assert "new run 2" in captured.err


def test_a_server_without_the_logs_endpoint_says_so():
    def no_route(query: dict[str, Any]) -> Any:
        raise ApiError(404, {"error": "not_found", "detail": "no API route at /api/v1/..."}, "")

    server = StandInServer(
        {"workloads/7/": lambda q: workload("running"), "workloads/7/logs/": no_route}
    )
    with pytest.raises(CliError, match="this server does not serve logs"):
        fairway_logs(server, "7")
