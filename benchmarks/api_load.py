"""API latency under concurrent clients: `python -m benchmarks.api_load`.

Starts the whole product (`manage.py run`: web processes, the worker, beat) on a free loopback
port, on SQLite and an embedded Redis in a temporary directory (or on `DATABASE_URL`/
`REDIS_URL` when they are set), loads the demo cluster, creates personal tokens, then runs
two loads, each from its own keep-alive connection per client:

- list: `GET /api/v1/workloads/` as the researcher alice from 1 and from 20 clients;
- mixed: 20 clients, each sending one submission (`POST /api/v1/workloads/`, as bob into
  his project `search`, a token per client as a lab's researchers would have) after every
  four reads of alice's list: 80 % reads, 20 % submissions. The scheduling loop runs in the
  worker meanwhile, started by those submissions. Alice sees none of bob's workloads, so her
  page is the same in every row and every run.

It prints p50/p95 latency and throughput per row, the CPU the web processes and the worker
spent per request, the goals of issue 33 beside them, and the load average of the machine
before and after (the server's processes share the machine with the clients, as they
would with a reverse proxy on the same host). `--runs N` repeats the rows on the same
server and prints each figure's range over the runs; each run starts once the worker
rests (the workloads of the run before have ended).
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PATH = "/api/v1/workloads/"
READER = ("alice", "fairway-alice")  # seed_demo's researcher in vision and nlp
SUBMITTER = ("bob", "fairway-bob")  # seed_demo's researcher in search and recsys
SUBMIT_PROJECT = "search"
SUBMIT_EVERY = 5  # one request in five is a submission in the mixed load
# Issue 33's goals on the 2-core development machine.
GOAL_LIST_RPS = 200.0
GOAL_LIST_P95_MS = 200.0
GOAL_SUBMIT_P95_MS = 300.0
GOAL_CLIENTS = 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def manage(*args: str, env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True
    )


def wait_until_serving(port: int, process: subprocess.Popen[bytes], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"manage.py run exited with code {process.returncode}")
        try:
            status, _ = request(port, "GET", "/login/")
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("the product did not answer in time")


def request(
    port: int,
    method: str,
    path: str,
    body: str | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def create_token(port: int, user: tuple[str, str]) -> str:
    basic = base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode()
    status, body = request(
        port,
        "POST",
        "/api/v1/tokens/",
        body=json.dumps({"name": f"api-load-{time.time_ns()}"}),
        headers={"Authorization": f"Basic {basic}", "Content-Type": "application/json"},
    )
    if status != 201:
        raise SystemExit(f"could not create a token: {status} {body[:200]!r}")
    return str(json.loads(body)["key"])


@dataclass
class Tokens:
    """A token for alice's reads, and one per client for bob's submissions (each token has
    its own submission rate limit, as each researcher of a lab would)."""

    reader: str
    submitters: list[str]


@dataclass
class Sample:
    """Latencies (ms) of one kind of request in one row."""

    latencies: list[float] = field(default_factory=list)
    errors: list[int] = field(default_factory=list)


def submission(run: str, client: int, i: int) -> str:
    return json.dumps(
        {
            "project": SUBMIT_PROJECT,
            "name": f"load-{run}-{client}-{i}",
            "gpus": 1,
            "spec": {"command": "python sweep.py", "duration": 5},
        }
    )


def drive(
    port: int, *, clients: int, requests: int, plan: Callable[[int, int], tuple[str, str, str]]
) -> tuple[dict[str, Sample], float]:
    """Send `requests` requests split over `clients` threads, each on one keep-alive
    connection; `plan(client, i)` gives (kind, method, body or "") of its i-th request
    ("" for a GET); kind names the row it counts in. The samples per kind and the wall time."""
    samples: dict[str, Sample] = {}
    lock = threading.Lock()
    share = [requests // clients + (i < requests % clients) for i in range(clients)]
    start = threading.Barrier(clients + 1)

    def client(index: int, count: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        mine: list[tuple[str, float, int]] = []
        start.wait()
        for i in range(count):
            kind, token, body = plan(index, i)
            headers = {"Authorization": f"Bearer {token}"}
            if body:
                headers["Content-Type"] = "application/json"
            t0 = time.perf_counter()
            conn.request("POST" if body else "GET", PATH, body=body or None, headers=headers)
            response = conn.getresponse()
            response.read()
            mine.append((kind, (time.perf_counter() - t0) * 1000, response.status))
        conn.close()
        with lock:
            for kind, ms, status in mine:
                sample = samples.setdefault(kind, Sample())
                sample.latencies.append(ms)
                if status >= 300:
                    sample.errors.append(status)

    threads = [threading.Thread(target=client, args=(i, n)) for i, n in enumerate(share)]
    for thread in threads:
        thread.start()
    start.wait()
    t0 = time.perf_counter()
    for thread in threads:
        thread.join()
    return samples, time.perf_counter() - t0


WEB_PROCESS_MARK = b"config.web_process"  # in the command line of every web process
WORKER_MARK = b"worker"  # a Celery worker's command line (its pool processes share it)


def cpu_seconds(server_pid: int) -> dict[str, float]:
    """CPU time (user + system) used so far by the web processes and by the worker (its
    pool processes included) that `server_pid` started (Linux's /proc; 0 elsewhere).
    Unlike latency, CPU per request hardly depends on what else the machine runs, so it
    compares changes on a shared machine."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    parents: dict[int, int] = {}
    cpu: dict[int, tuple[str, float]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
            pid = int(stat.parent.name)
            role = _role((stat.parent / "cmdline").read_bytes())
            if role:
                cpu[pid] = (role, (int(fields[11]) + int(fields[12])) / ticks)
            parents[pid] = int(fields[1])
        except (OSError, ValueError, IndexError):
            continue  # a process that ended meanwhile

    def started_by_server(pid: int) -> bool:
        while pid > 1:
            if pid == server_pid:
                return True
            pid = parents.get(pid, 0)
        return False

    totals = {"web": 0.0, "worker": 0.0}
    for pid, (role, seconds) in cpu.items():
        if started_by_server(pid):
            totals[role] += seconds
    return totals


def _role(cmdline: bytes) -> str:
    if WEB_PROCESS_MARK in cmdline:
        return "web"
    if b"celery" in cmdline and WORKER_MARK in cmdline:
        return "worker"
    return ""


def cpu_spent(server_pid: int, before: dict[str, float]) -> dict[str, float]:
    return {role: seconds - before[role] for role, seconds in cpu_seconds(server_pid).items()}


def summary(
    name: str, clients: int, sample: Sample, wall: float, cpu: dict[str, float], total: int
) -> dict[str, float | str]:
    """A row's figures; `cpu` is the CPU seconds of the web processes and of the worker
    over the row's `total` requests (of every kind)."""
    cuts = statistics.quantiles(sample.latencies, n=100)
    return {
        "row": name,
        "clients": clients,
        "requests": len(sample.latencies),
        "errors": len(sample.errors),
        "p50": cuts[49],
        "p95": cuts[94],
        "rps": len(sample.latencies) / wall,
        "cpu": cpu["web"] * 1000 / total,
        "worker_cpu": cpu["worker"] * 1000 / total,
    }


def measure_list(
    port: int, server: int, tokens: Tokens, *, clients: int, requests: int
) -> list[dict[str, Any]]:
    before = cpu_seconds(server)
    samples, wall = drive(
        port, clients=clients, requests=requests, plan=lambda c, i: ("list", tokens.reader, "")
    )
    cpu = cpu_spent(server, before)
    return [summary("list", clients, samples["list"], wall, cpu, requests)]


def measure_mixed(
    port: int, server: int, tokens: Tokens, *, clients: int, requests: int, run: str
) -> list[dict[str, Any]]:
    def plan(c: int, i: int) -> tuple[str, str, str]:
        if (i + c) % SUBMIT_EVERY == SUBMIT_EVERY - 1:  # clients' submissions interleave
            return "submit", tokens.submitters[c % len(tokens.submitters)], submission(run, c, i)
        return "read", tokens.reader, ""

    before = cpu_seconds(server)
    samples, wall = drive(port, clients=clients, requests=requests, plan=plan)
    cpu = cpu_spent(server, before)
    return [
        summary(f"mixed: {kind}", clients, samples[kind], wall, cpu, requests)
        for kind in ("read", "submit")
        if kind in samples
    ]


def goal(row: dict[str, Any]) -> str:
    """Issue 33's goal for this row, and whether this run met it."""
    if row["row"] == "list" and row["clients"] == GOAL_CLIENTS:
        met = row["rps"] >= GOAL_LIST_RPS and row["p95"] < GOAL_LIST_P95_MS
        text = f">= {GOAL_LIST_RPS:.0f} req/s, p95 < {GOAL_LIST_P95_MS:.0f} ms"
    elif row["row"] == "mixed: submit":
        met = row["p95"] < GOAL_SUBMIT_P95_MS
        text = f"p95 < {GOAL_SUBMIT_P95_MS:.0f} ms"
    else:
        return ""
    return f"{text}: {'met' if met and not row['errors'] else 'NOT met'}"


def span(values: list[float]) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:.1f}" if len(values) == 1 or f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}-{hi:.1f}"


def print_table(runs: list[list[dict[str, Any]]], header: str) -> None:
    print(header)
    print(
        f"{'row':<14} {'clients':>7} {'requests':>8} {'errors':>6} "
        f"{'p50 ms':>13} {'p95 ms':>13} {'req/s':>13} {'web CPU ms':>11} {'worker CPU ms':>13}"
        "  goal (issue 33)"
    )
    for i, first in enumerate(runs[0]):
        rows = [run[i] for run in runs]
        goals = [goal(r) for r in rows]
        met = sum(g.endswith(": met") for g in goals)
        verdict = f"{goals[0].rpartition(':')[0]}: met in {met} of {len(rows)}" if goals[0] else ""
        print(
            f"{first['row']:<14} {first['clients']:>7} {first['requests']:>8} "
            f"{sum(r['errors'] for r in rows):>6} {span([r['p50'] for r in rows]):>13} "
            f"{span([r['p95'] for r in rows]):>13} {span([r['rps'] for r in rows]):>13} "
            f"{span([r['cpu'] for r in rows]):>11} {span([r['worker_cpu'] for r in rows]):>13}"
            f"  {verdict}"
        )


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.1f} {five:.1f} {fifteen:.1f}"


SETTLED_SHARE = 0.05  # of one core: the worker is at rest (the beat's cycles and ticks)
SETTLE_SECONDS = 30.0


def settle(server: int, run: int) -> None:
    """Wait (up to SETTLE_SECONDS) until the worker rests: the workloads an earlier mixed
    load submitted have run and ended, and their cycles are not charged to the next rows."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        before = cpu_seconds(server)
        time.sleep(1.0)
        if cpu_spent(server, before)["worker"] < SETTLED_SHARE:
            return
    print(
        f"warning: before run {run + 1} the worker did not rest within {SETTLE_SECONDS:.0f} s "
        "(workloads waiting from elsewhere?); its cycles share the machine with the run",
        file=sys.stderr,
    )


def run_rows(
    port: int, server: int, tokens: Tokens, args: argparse.Namespace, run: int
) -> list[dict[str, Any]]:
    """One run of every row against the product at `port` (`server`: its process id),
    once the worker rests."""
    settle(server, run)
    rows = []
    for clients in (int(c) for c in args.clients.split(",") if c.strip()):
        rows += measure_list(port, server, tokens, clients=clients, requests=args.requests)
    if args.mixed_clients:
        rows += measure_mixed(
            port,
            server,
            tokens,
            clients=args.mixed_clients,
            requests=args.mixed_requests,
            run=f"{run}{time.time_ns()}",  # unique workload names across runs
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400, help="requests per row")
    parser.add_argument(
        "--mixed-requests",
        type=int,
        default=1000,
        help="requests of the mixed load (a fifth are submissions: 200 for its p95)",
    )
    parser.add_argument("--clients", default="1,20", help="comma-separated client counts")
    parser.add_argument(
        "--mixed-clients",
        type=int,
        default=GOAL_CLIENTS,
        help="clients of the mixed load (0: none)",
    )
    parser.add_argument("--runs", type=int, default=1, help="repeat the rows; print ranges")
    parser.add_argument("--web-concurrency", help="WEB_CONCURRENCY for the server")
    args = parser.parse_args()
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="fairway-api-load-") as var:
        env = {**os.environ, "FAIRWAY_VAR_DIR": var, "PYTHONUNBUFFERED": "1"}
        if args.web_concurrency:
            env["WEB_CONCURRENCY"] = args.web_concurrency
        manage("migrate", "--noinput", "-v0", env=env)
        manage("seed_demo", env=env)
        port = free_port()
        with open(Path(var) / "run.log", "w") as log:
            server = subprocess.Popen(
                [sys.executable, "manage.py", "run", "--port", str(port)],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            try:
                wait_until_serving(port, server)
                tokens = Tokens(
                    reader=create_token(port, READER),
                    submitters=[create_token(port, SUBMITTER) for _ in range(args.mixed_clients)],
                )
                # warm every web process up
                measure_list(port, server.pid, tokens, clients=4, requests=40)
                runs = [run_rows(port, server.pid, tokens, args, n) for n in range(args.runs)]
            finally:
                server.send_signal(signal.SIGTERM)  # as Ctrl-C (SIGINT may be ignored here)
                server.wait(timeout=60)
    database = "PostgreSQL" if env.get("DATABASE_URL", "").startswith("postgres") else "SQLite"
    print_table(
        runs,
        f"{PATH}  (WEB_CONCURRENCY={env.get('WEB_CONCURRENCY', 'default')}, {database}, "
        f"{os.cpu_count()} cores, {args.runs} run(s), figures as ranges over the runs; "
        f"load average {load_before} before, {load_average()} after)",
    )


if __name__ == "__main__":
    main()
