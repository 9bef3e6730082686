"""API latency under concurrent clients: `python -m benchmarks.api_load`.

Starts the whole product (`manage.py run`) on a free loopback port, on SQLite and an
embedded Redis in a temporary directory (or on `DATABASE_URL`/`REDIS_URL` when they are
set), loads the demo cluster, creates a token for a researcher, then sends a bounded number
of `GET /api/v1/workloads/` requests from 1 and from 20 concurrent clients (one keep-alive
connection each) and prints p50/p95 latency and throughput per row. The server's processes
share the machine with the clients, as they would with a reverse proxy on the same host.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATH = "/api/v1/workloads/"
USER, PASSWORD = "alice", "fairway-alice"  # seed_demo's researcher


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def manage(*args: str, env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True
    )


def wait_until_serving(port: int, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
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


def create_token(port: int) -> str:
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
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


def measure(port: int, token: str, *, clients: int, requests: int) -> dict[str, float]:
    """Send `requests` GETs split over `clients` threads; latencies in milliseconds."""
    latencies: list[float] = []
    errors: list[int] = []
    lock = threading.Lock()
    share = [requests // clients + (i < requests % clients) for i in range(clients)]
    headers = {"Authorization": f"Bearer {token}"}
    start = threading.Barrier(clients + 1)

    def client(count: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        mine: list[float] = []
        start.wait()
        for _ in range(count):
            t0 = time.perf_counter()
            conn.request("GET", PATH, headers=headers)
            response = conn.getresponse()
            response.read()
            mine.append((time.perf_counter() - t0) * 1000)
            if response.status != 200:
                with lock:
                    errors.append(response.status)
        conn.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(n,)) for n in share]
    for thread in threads:
        thread.start()
    start.wait()
    t0 = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - t0
    cuts = statistics.quantiles(latencies, n=100)
    return {
        "clients": clients,
        "requests": len(latencies),
        "errors": len(errors),
        "p50": cuts[49],
        "p95": cuts[94],
        "rps": len(latencies) / wall,
    }


def print_table(rows: list[dict[str, float]], web_concurrency: str) -> None:
    print(f"GET {PATH}  (WEB_CONCURRENCY={web_concurrency}, {os.cpu_count()} cores)")
    print(f"{'clients':>7} {'requests':>8} {'errors':>6} {'p50 ms':>8} {'p95 ms':>8} {'req/s':>7}")
    for r in rows:
        print(
            f"{r['clients']:>7} {r['requests']:>8} {r['errors']:>6} "
            f"{r['p50']:>8.1f} {r['p95']:>8.1f} {r['rps']:>7.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400, help="requests per row")
    parser.add_argument("--clients", default="1,20", help="comma-separated client counts")
    parser.add_argument("--web-concurrency", help="WEB_CONCURRENCY for the server")
    args = parser.parse_args()
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
                token = create_token(port)
                measure(port, token, clients=4, requests=40)  # warm every web process up
                rows = [
                    measure(port, token, clients=int(c), requests=args.requests)
                    for c in args.clients.split(",")
                ]
            finally:
                server.send_signal(signal.SIGTERM)  # as Ctrl-C (SIGINT may be ignored here)
                server.wait(timeout=60)
    print_table(rows, env.get("WEB_CONCURRENCY", "default"))


if __name__ == "__main__":
    main()
