"""Real execution throughput: `python -m benchmarks.agent_bench` (PostgreSQL needed:
DATABASE_URL of a server, e.g. from `bin/services start`; it makes a database of its own
and drops it afterwards).

The whole product (`manage.py run`: web, worker, beat, embedded Redis) and N
`fairway-agent` processes with fake GPUs, all on this machine; W short real commands
(`true`, one GPU each) submitted at once through the API's bulk endpoint. It prints the
latency from submission to the agent's report that the process runs (p50, p95, max), the
runs started per second, and the wall time until every workload has completed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

from benchmarks.agent_stack import AgentStack, wait_for

BULK = 500  # workloads per bulk request (the API's bound is at least this)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run(
    workloads: int, agents: int, gpus: int, command: str, keep: bool = False, web: int = 3
) -> int:
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        print("agent_bench needs DATABASE_URL of a PostgreSQL server (bin/services start)")
        return 2
    parts = urlsplit(base)
    admin = urlunsplit(parts._replace(path="/postgres"))
    name = f"fairway_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    database = urlunsplit(parts._replace(path=f"/{name}"))
    var = Path(tempfile.mkdtemp(prefix="fairway-agent-bench-"))
    stack = AgentStack(
        var_dir=var, env={"DATABASE_URL": database, "REDIS_URL": ""},
        projects={"team": float(agents * gpus)}, grace=2, web=web,
    )  # fmt: skip
    try:
        print(f"starting the product and {agents} agents x {gpus} fake GPUs ...", flush=True)
        stack.start()
        for i in range(agents):
            stack.start_agent(f"bench-{i + 1}", gpus=gpus)
        with psycopg.connect(database) as conn:
            wait_for(
                lambda: conn.execute(
                    "select count(*) from scheduler_core_node where state = 'ready'"
                ).fetchone()[0] >= agents,  # type: ignore[index]
                120, "the agents to register",
            )  # fmt: skip
        print(f"submitting {workloads} workloads of `{command}` ...", flush=True)
        t0 = time.monotonic()
        for start in range(0, workloads, BULK):
            batch = [
                {"name": f"b-{i}", "project": "team", "pools": ["gpu"], "gpus": 1,
                 "spec": {"command": command}}
                for i in range(start, min(start + BULK, workloads))
            ]  # fmt: skip
            status, body = stack.request("POST", "/api/v1/workloads/bulk/", {"workloads": batch})
            if status != 201:
                print(f"bulk submit failed: {status} {str(body)[:500]}")
                return 1
        with psycopg.connect(database) as conn:

            def done() -> bool:
                row = conn.execute(
                    "select count(*) from scheduler_core_workload where status in "
                    "('completed', 'failed', 'cancelled')"
                ).fetchone()
                left = workloads - (row[0] if row else 0)
                print(f"\r  {workloads - left}/{workloads} done", end="", flush=True)
                return left == 0

            wait_for(done, 1800, "every workload to end")
            wall = time.monotonic() - t0
            print()
            rows = conn.execute(
                "select extract(epoch from r.started_at - w.submitted_at), "
                "extract(epoch from r.started_at) from scheduler_core_podrun r "
                "join scheduler_core_workload w on w.id = r.workload_id "
                "where r.started_at is not null"
            ).fetchall()
            failed = conn.execute(
                "select count(*) from scheduler_core_workload where status = 'failed'"
            ).fetchone()
            # where a run's time goes: start sent -> the agent says it runs -> it exits ->
            # its workload is completed; and how long a device waits for its next run
            phases = conn.execute(
                "select avg(extract(epoch from r.started_at - r.created_at)), "
                "avg(extract(epoch from r.created_at - w.started_at)), "
                "avg(extract(epoch from r.ended_at - r.started_at)), "
                "avg(extract(epoch from w.finished_at - r.ended_at)) "
                "from scheduler_core_podrun r join scheduler_core_workload w "
                "on w.id = r.workload_id where r.ended_at is not null"
            ).fetchone()
            gaps = conn.execute(
                "select avg(gap), avg(placed) from (select extract(epoch from r.created_at - "
                "lag(r.ended_at) over (partition by r.node_id, r.gpu_devices::text "
                "order by r.created_at)) as gap, extract(epoch from w.started_at - "
                "lag(r.ended_at) over (partition by r.node_id, r.gpu_devices::text "
                "order by r.created_at)) as placed from scheduler_core_podrun r join "
                "scheduler_core_workload w on w.id = r.workload_id) g where gap is not null"
            ).fetchone()
            cycles = conn.execute(
                "select count(*), avg(duration_seconds), max(duration_seconds), "
                "sum(duration_seconds), avg(decisions) from scheduler_core_cyclerecord "
                "where started_at >= (select min(submitted_at) from scheduler_core_workload)"
            ).fetchone()
        latency = [float(r[0]) for r in rows]
        starts = sorted(float(r[1]) for r in rows)
        span = (starts[-1] - starts[0]) if len(starts) > 1 else 0.0
        print(
            f"workloads: {workloads}, runs started: {len(rows)}, "
            f"failed: {failed[0] if failed else '?'}"
        )
        print(
            f"submit -> process running: p50 {statistics.median(latency):.2f} s, "
            f"p95 {percentile(latency, 0.95):.2f} s, max {max(latency):.2f} s"
        )
        print(f"runs started per second: {len(rows) / span if span else float('nan'):.1f}")
        if phases and phases[0] is not None:
            print(
                f"per run, mean: placed -> start sent {float(phases[1]):.2f} s, "
                f"start sent -> running {float(phases[0]):.2f} s, "
                f"running -> exited {float(phases[2]):.2f} s, "
                f"exited -> workload completed {float(phases[3]):.2f} s"
            )
        if gaps and gaps[0] is not None:
            print(f"a device's wait from one run's exit to the next start sent: "
                  f"{float(gaps[0]):.2f} s (mean; to the next placement "
                  f"{float(gaps[1]):.2f} s)")  # fmt: skip
        if cycles and cycles[0]:
            print(f"scheduling cycles: {cycles[0]}, mean {float(cycles[1]):.2f} s, max "
                  f"{float(cycles[2]):.2f} s, busy {float(cycles[3]) / wall:.0%} of the wall "
                  f"time, {float(cycles[4]):.1f} decisions each")  # fmt: skip
        print(f"wall time to complete all: {wall:.1f} s")
        return 0
    finally:
        stack.stop()
        if keep:
            print(f"database kept: {database}")
        else:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=1000)
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--gpus", type=int, default=8, help="fake GPUs per agent")
    parser.add_argument("--command", default="true")
    parser.add_argument("--keep-database", action="store_true", help="to look into it after")
    parser.add_argument("--web", type=int, default=3, help="web processes (WEB_CONCURRENCY)")
    args = parser.parse_args(argv)
    return run(args.workloads, args.agents, args.gpus, args.command, args.keep_database, args.web)


if __name__ == "__main__":
    sys.exit(main())
