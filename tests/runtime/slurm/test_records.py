"""Reading what Slurm 22.05 prints (samples taken from the real commands)."""

from scheduler_core.runtime.executors.slurm.hostlist import expand
from scheduler_core.runtime.executors.slurm.records import (
    parse_gres,
    parse_job,
    parse_jobcomp_line,
    parse_node,
    parse_sacct_line,
)


def test_host_lists_expand_as_scontrol_does():
    assert expand("fw[1-3,5],gpu07") == ["fw1", "fw2", "fw3", "fw5", "gpu07"]
    assert expand("n[08-10]") == ["n08", "n09", "n10"]
    assert expand("") == []


def test_gres_reads_typed_untyped_and_socket_forms():
    assert [g.indices for g in parse_gres("gpu:g0:1(IDX:0),gpu:g1:0(IDX:N/A)")] == [(0,), ()]
    (untyped,) = parse_gres("gpu:8(IDX:0-2,5)")
    assert (untyped.type, untyped.count, untyped.indices) == ("", 8, (0, 1, 2, 5))
    (model,) = parse_gres("gpu:a100:4(S:0-1)")
    assert (model.type, model.count) == ("a100", 4)


def test_a_node_with_one_type_per_index_is_pinnable_and_says_which_gpus_are_used():
    node = parse_node(
        {
            "name": "fw1", "state": "mixed", "state_flags": [], "partitions": ["fairway"],
            "gres": "gpu:g0:1,gpu:g1:1,gpu:g2:1",
            "gres_used": "gpu:g0:0(IDX:N/A),gpu:g1:1(IDX:1),gpu:g2:0(IDX:N/A)",
            "cpus": 32, "real_memory": 100000, "address": "127.0.0.1",
        }
    )  # fmt: skip
    assert (node.gpus, node.pinnable, node.used_gpus, node.usable) == (3, True, (1,), True)
    drained = parse_node({"name": "fw3", "state": "idle", "state_flags": ["DRAIN"],
                          "reason": "maint", "gres": "gpu:8"})  # fmt: skip
    assert (drained.usable, drained.pinnable, drained.gpus) == (False, False, 8)
    assert drained.why_unusable == "idle+drain: maint"


def test_a_job_reads_its_gpus_per_node_and_its_exit_status():
    job = parse_job(
        {
            "job_id": 7, "name": "fw-r1", "job_state": "FAILED", "nodes": "fw[1-2]",
            "gres_detail": ["gpu:g2:1(IDX:2),gpu:g5:1(IDX:5)", "gpu:2(IDX:0-1)"],
            "exit_code": 3 << 8, "het_job_id": 0, "restart_cnt": 0,
        }
    )  # fmt: skip
    assert job.gpus_by_node == {"fw1": (2, 5), "fw2": (0, 1)}
    assert (job.ended, job.exit_code, job.signal) == (True, 3, None)
    killed = parse_job({"job_id": 8, "job_state": "CANCELLED", "exit_code": 15})
    assert (killed.exit_code, killed.signal) == (0, 15)
    running = parse_job({"job_id": 9, "job_state": "RUNNING", "exit_code": 0})
    assert (running.running, running.exit_code) == (True, None)


def test_completion_records_from_jobcomp_and_sacct():
    line = (
        "JobId=2 UserId=root(0) GroupId=root(0) Name=het JobState=FAILED Partition=fairway "
        "TimeLimit=UNLIMITED StartTime=2026-11-27T23:11:07 EndTime=2026-11-27T23:11:07 "
        "NodeList=fw1 NodeCnt=1 HetJobId=2 HetJobOffset=0 DerivedExitCode=0:0 ExitCode=3:0"
    )
    record = parse_jobcomp_line(line)
    assert record is not None
    assert (record.job_id, record.state, record.exit_code, record.nodes) == (
        2,
        "FAILED",
        3,
        ("fw1",),
    )
    assert parse_jobcomp_line(line.replace("FAILED", "PENDING")) is None  # a requeue's line
    cancelled = parse_sacct_line("12|fw-r3|CANCELLED by 0|0:15|fw2|2026-11-27T23:20:00")
    assert cancelled is not None and (cancelled.state, cancelled.signal) == ("CANCELLED", 15)
