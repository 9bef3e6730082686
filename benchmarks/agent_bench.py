"""Real execution throughput: `python -m benchmarks.agent_bench` (PostgreSQL needed:
DATABASE_URL of a server, e.g. from `bin/services start`; it makes a database of its own
and drops it afterwards).

The whole product (`manage.py run`: web, worker, beat, embedded Redis) and N
`fairway-agent` processes with fake GPUs, all on this machine; W short real commands
(`true`, one GPU each) submitted at once through the API's bulk endpoint, then single
workloads one at a time on the idle cluster. It prints the latency from submission to the
agent's report that the process runs (p50, p95, max), the runs started per second, where a
run's time goes (placed -> start sent -> running -> exited), how long a device waits
between one run's exit and the next run, and the goals of issue 35 with whether each is met.
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
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

from benchmarks.agent_stack import AgentStack, wait_for

BULK = 500  # workloads per bulk request (the API's bound is at least this)
IDLE_SAMPLES = 20  # single submissions on the idle cluster after the burst

# Issue 35, section 5: what Slurm 22.05 does on the same machine, as goals.
GOAL_RATE = 40.0  # runs started per second in the burst
GOAL_DEVICE_IDLE = 0.5  # seconds a device waits between one run's exit and the next start
GOAL_IDLE_P50, GOAL_IDLE_P95 = 0.5, 1.0  # submit -> process running on an idle cluster

PHASES = """
select avg(extract(epoch from r.created_at - w.started_at)),
       avg(extract(epoch from r.started_at - r.created_at)),
       avg(extract(epoch from r.ended_at - r.started_at)),
       avg(extract(epoch from w.finished_at - r.ended_at))
from scheduler_core_podrun r join scheduler_core_workload w on w.id = r.workload_id
where r.ended_at is not null and w.submitted_at < %s
"""
# per device (node, GPU index): the previous run's exit -> this run placed, its start
# sent, and the agent's report that it runs
GAPS = """
select extract(epoch from w.started_at - prev_end), extract(epoch from g.created_at - prev_end),
       extract(epoch from g.started_at - prev_end)
from (select r.created_at, r.started_at, r.workload_id,
             lag(r.ended_at) over (partition by r.node_id, r.gpu_devices::text
                                   order by r.created_at) as prev_end
      from scheduler_core_podrun r) g
join scheduler_core_workload w on w.id = g.workload_id
where prev_end is not null and g.started_at is not null and w.submitted_at < %s
"""
CYCLES = """
select count(*), avg(duration_seconds), max(duration_seconds), sum(duration_seconds),
       avg(decisions)
from scheduler_core_cyclerecord where started_at >= (select min(submitted_at)
                                                     from scheduler_core_workload)
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def goal(name: str, value: float, target: float, *, at_least: bool = False) -> str:
    met = value >= target if at_least else value <= target
    sign = ">=" if at_least else "<="
    return f"  {name}: {value:.2f} (goal {sign} {target:g}): {'met' if met else 'NOT met'}"


def _database(base: str) -> tuple[str, str, str]:
    parts = urlsplit(base)
    admin = urlunsplit(parts._replace(path="/postgres"))
    name = f"fairway_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return admin, name, urlunsplit(parts._replace(path=f"/{name}"))


def _submit_burst(stack: AgentStack, workloads: int, command: str) -> bool:
    for start in range(0, workloads, BULK):
        batch = [
            {"name": f"b-{i}", "project": "team", "pools": ["gpu"], "gpus": 1,
             "spec": {"command": command}}
            for i in range(start, min(start + BULK, workloads))
        ]  # fmt: skip
        status, body = stack.request("POST", "/api/v1/workloads/bulk/", {"workloads": batch})
        if status != 201:
            print(f"bulk submit failed: {status} {str(body)[:500]}")
            return False
    return True


def _wait_done(conn: psycopg.Connection[Any], total: int, *, show: bool = True) -> None:
    def done() -> bool:
        row = conn.execute(
            "select count(*) from scheduler_core_workload where status in "
            "('completed', 'failed', 'cancelled')"
        ).fetchone()
        finished = row[0] if row else 0
        if show:
            print(f"\r  {finished}/{total} done", end="", flush=True)
        return finished >= total

    wait_for(done, 1800, "every workload to end")


def _idle_latencies(
    stack: AgentStack, conn: psycopg.Connection[Any], done: int, command: str
) -> list[float]:
    """Submit one workload at a time on the idle cluster: submit -> process running."""
    latencies = []
    for i in range(IDLE_SAMPLES):
        time.sleep(0.3)  # let the previous run's reports settle: the cluster is idle
        body = {"name": f"idle-{i}", "project": "team", "pools": ["gpu"], "gpus": 1,
                "spec": {"command": command}}  # fmt: skip
        status, data = stack.request("POST", "/api/v1/workloads/", body)
        if status != 201:
            raise RuntimeError(f"submit failed: {status} {str(data)[:300]}")
        _wait_done(conn, done + i + 1, show=False)
        row = conn.execute(
            "select extract(epoch from r.started_at - w.submitted_at) from "
            "scheduler_core_podrun r join scheduler_core_workload w on w.id = r.workload_id "
            "where w.id = %s and r.started_at is not null order by r.id limit 1",
            [data["id"]],
        ).fetchone()
        if row:
            latencies.append(float(row[0]))
    return latencies


def _report_burst(conn: psycopg.Connection[Any], workloads: int, wall: float, cut: Any) -> float:
    rows = conn.execute(
        "select extract(epoch from r.started_at - w.submitted_at), "
        "extract(epoch from r.started_at) from scheduler_core_podrun r "
        "join scheduler_core_workload w on w.id = r.workload_id "
        "where r.started_at is not null and w.submitted_at < %s",
        [cut],
    ).fetchall()
    failed = conn.execute(
        "select count(*) from scheduler_core_workload where status = 'failed'"
    ).fetchone()
    latency = [float(r[0]) for r in rows]
    starts = sorted(float(r[1]) for r in rows)
    span = (starts[-1] - starts[0]) if len(starts) > 1 else 0.0
    rate = len(rows) / span if span else float("nan")
    print(f"workloads: {workloads}, runs started: {len(rows)}, "
          f"failed: {failed[0] if failed else '?'}, wall time to complete all: "
          f"{wall:.1f} s")  # fmt: skip
    print(f"burst: submit -> process running p50 {statistics.median(latency):.2f} s, "
          f"p95 {percentile(latency, 0.95):.2f} s, max {max(latency):.2f} s; "
          f"{rate:.1f} runs started per second")  # fmt: skip
    phases = conn.execute(PHASES, [cut]).fetchone()
    if phases and phases[0] is not None:
        print(f"per run, mean: placed -> start sent {float(phases[0]):.2f} s, "
              f"start sent -> running {float(phases[1]):.2f} s, "
              f"running -> exited {float(phases[2]):.2f} s, "
              f"exited -> workload completed {float(phases[3]):.2f} s")  # fmt: skip
    return rate


def _report_gaps(conn: psycopg.Connection[Any], cut: Any) -> float:
    gaps = conn.execute(GAPS, [cut]).fetchall()
    if not gaps:
        return float("nan")
    placed, sent, running = ([float(g[i]) for g in gaps] for i in range(3))
    print(f"a device between runs (mean / p50): exit -> next placed "
          f"{statistics.mean(placed):.2f} / {statistics.median(placed):.2f} s, "
          f"-> start sent {statistics.mean(sent):.2f} / {statistics.median(sent):.2f} s, "
          f"-> running {statistics.mean(running):.2f} / "
          f"{statistics.median(running):.2f} s")  # fmt: skip
    cycles = conn.execute(CYCLES).fetchone()
    if cycles and cycles[0]:
        print(f"scheduling cycles: {cycles[0]}, mean {float(cycles[1]):.2f} s, max "
              f"{float(cycles[2]):.2f} s, {float(cycles[4]):.1f} decisions each")  # fmt: skip
    return statistics.mean(running)


def _log_troubles(output: str) -> str:
    """What went wrong in the product while it ran, counted from its log."""
    return (
        f"the product's log: {output.count('Traceback')} tracebacks, "
        f"{output.count('deadlock detected')} deadlocks, "
        f"{output.count('agent connection closed')} agent connections closed by the server"
    )


def run(
    workloads: int,
    agents: int,
    gpus: int,
    command: str,
    keep: bool = False,
    web: int = 3,
    product_log: Path | None = None,
) -> int:
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        print("agent_bench needs DATABASE_URL of a PostgreSQL server (bin/services start)")
        return 2
    admin, name, database = _database(base)
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
        with psycopg.connect(database, autocommit=True) as conn:
            wait_for(
                lambda: conn.execute(
                    "select count(*) from scheduler_core_node where state = 'ready'"
                ).fetchone()[0] >= agents,  # type: ignore[index]
                120, "the agents to register",
            )  # fmt: skip
            print(f"submitting {workloads} workloads of `{command}` ...", flush=True)
            t0 = time.monotonic()
            if not _submit_burst(stack, workloads, command):
                return 1
            _wait_done(conn, workloads)
            wall = time.monotonic() - t0
            print()
            cut = conn.execute("select now()").fetchone()[0]  # type: ignore[index]
            print(f"idle cluster: {IDLE_SAMPLES} single submissions, one at a time ...")
            idle = _idle_latencies(stack, conn, workloads, command)
            rate = _report_burst(conn, workloads, wall, cut)
            device_idle = _report_gaps(conn, cut)
            print(f"idle cluster: submit -> process running p50 {statistics.median(idle):.2f} s, "
                  f"p95 {percentile(idle, 0.95):.2f} s ({len(idle)} runs)")  # fmt: skip
        print("goals (issue 35: Slurm on the same machine):")
        print(goal("runs started per second in the burst", rate, GOAL_RATE, at_least=True))
        print(goal("a device idle between runs, exit -> next running (mean s)", device_idle,
                   GOAL_DEVICE_IDLE))  # fmt: skip
        print(goal("idle cluster submit -> running p50 (s)", statistics.median(idle),
                   GOAL_IDLE_P50))  # fmt: skip
        print(goal("idle cluster submit -> running p95 (s)", percentile(idle, 0.95),
                   GOAL_IDLE_P95))  # fmt: skip
        print(_log_troubles(stack.product_output()))
        return 0
    finally:
        stack.stop()
        if product_log is not None:
            product_log.write_text(stack.product_output())
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
    parser.add_argument("--product-log", type=Path, help="write the product's output there")
    args = parser.parse_args(argv)
    return run(
        args.workloads, args.agents, args.gpus, args.command, args.keep_database, args.web,
        args.product_log,
    )  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
