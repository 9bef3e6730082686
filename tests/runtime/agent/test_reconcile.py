"""Reconcile: a GPU is given to the next pod only once its previous process is gone, a
pod that lost its place is told to stop once, and an agent that reconnects keeps only the
runs still wanted (docs/agent.md, "Desired and actual state: reconcile")."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.utils import timezone

from scheduler_core.choices import WorkloadStatus
from scheduler_core.loop import triggers
from scheduler_core.loop.cycle import run_cycle, run_scheduling_loop
from scheduler_core.models import Node, PodRun
from scheduler_core.models.agents import PodRunState
from scheduler_core.runtime.reconcile import lock_nodes, reconcile
from scheduler_core.runtime.tick import OWED_AFTER, tick
from scheduler_core.schemas.agents import GpuUsage, RunUsage
from scheduler_core.services.agents import record_usage
from tests import factories
from tests.runtime.agent.conftest import assert_no_device_held_twice, runs_of


def _reload(w):
    w.refresh_from_db()
    return w


def test_a_reclaimed_gpu_starts_its_new_pod_only_after_the_old_process_exits(
    agents, submit, agent_cluster
):
    # nlp has no quota: it borrows the whole pool, then vision takes its quota back
    borrowers = [submit(f"borrow-{i}", gpus=4, project="nlp") for i in range(3)]
    agents.cycle()
    for w in borrowers:
        for run in runs_of(w):
            agents.report(run, "running")
    assert all(_reload(w).status == WorkloadStatus.RUNNING for w in borrowers)
    mark = len(agents.sent)

    owner = submit("owner", gpus=4, project="vision")
    agents.cycle()
    assert_no_device_held_twice()
    evicted = [w for w in borrowers if _reload(w).status == WorkloadStatus.PENDING]
    assert evicted, "vision reclaims its quota"
    assert _reload(owner).status == WorkloadStatus.STARTING
    assert runs_of(owner) == []  # its GPUs are still releasing
    signals = agents.signals(mark)
    victim_runs = [r for w in evicted for r in runs_of(w)]
    assert {m.body["run"] for m in signals} == {r.pk for r in victim_runs}
    assert {m.body["reason"] for m in signals} == {"preempt"}
    assert all(m.body["grace_period"] == 10 for m in signals)

    agents.cycle()  # nothing changes while the victim still runs
    assert runs_of(owner) == []
    for run in victim_runs:
        agents.report(run, "exited", exit_code=143, signal="SIGTERM")
        assert_no_device_held_twice()
    (run,) = runs_of(owner)
    assert run.state == PodRunState.STARTING
    assert [m.body["run"] for m in agents.starts(mark)] == [run.pk]
    for w in evicted:  # stopped by Fairway: re-queued, whatever the exit code
        w = _reload(w)
        assert w.status == WorkloadStatus.PENDING and w.restarts == 0


def test_epochs_rise_per_node_and_reconcile_is_idempotent(agents, submit, agent_cluster):
    Node.objects.update(last_epoch=41)  # as if 41 runs were started on each node
    w = submit("two", gpus=1, pods=2)
    agents.cycle()
    first, second = runs_of(w)
    assert first.node_id == second.node_id  # bin-packed
    assert sorted([first.epoch, second.epoch]) == [42, 43]
    assert Node.objects.get(pk=first.node_id).last_epoch == 43
    sent = len(agents.sent)
    agents.settle(reconcile)
    agents.settle(reconcile)
    assert len(agents.sent) == sent and len(runs_of(w)) == 2


def test_hello_keeps_wanted_runs_resends_owed_starts_and_drops_the_rest(
    agents, submit, agent_cluster
):
    w = submit("pair", gpus=2, pods=2)
    agents.cycle()
    first, second = runs_of(w)
    assert first.node_id == second.node_id  # bin-packed
    agents.report(first, "running")
    node = first.node
    mark = len(agents.sent)
    runs = [
        {"run": first.pk, "epoch": first.epoch, "state": "running", "exit_code": None,
         "signal": None, "log_size": 10},
        {"run": 99999, "epoch": 1, "state": "running", "exit_code": None, "signal": None,
         "log_size": 0},
    ]  # fmt: skip
    keep = agents.hello(node, runs)
    assert keep == [first.pk]  # the unknown run is not kept
    (again,) = agents.starts(mark)  # a start the agent never got goes again, new epoch
    node.refresh_from_db()
    assert (again.body["run"], again.body["epoch"]) == (second.pk, node.last_epoch)
    assert again.body["epoch"] > second.epoch
    assert len(runs_of(w)) == 2
    assert _reload(w).status == WorkloadStatus.STARTING


def test_hello_without_a_running_run_loses_it_and_re_queues_its_workload(
    agents, submit, agent_cluster
):
    w = submit("gone", gpus=1)
    agents.cycle()
    (run,) = runs_of(w)
    agents.report(run, "running")
    assert agents.hello(run.node, []) == []
    run.refresh_from_db()
    assert run.state == PodRunState.LOST
    w = _reload(w)
    assert w.status == WorkloadStatus.PENDING and w.restarts == 1
    assert "no longer has this run" in w.pending_reason


def test_hello_reporting_an_exit_applies_it(agents, submit):
    w = submit("quick", gpus=1)
    agents.cycle()
    (run,) = runs_of(w)
    keep = agents.hello(
        run.node,
        [{"run": run.pk, "epoch": run.epoch, "state": "exited", "exit_code": 0,
          "signal": None, "log_size": 5}],
    )  # fmt: skip
    assert keep == []
    assert _reload(w).status == WorkloadStatus.COMPLETED


def test_simulated_pools_are_left_alone(agents, db):
    pool = factories.pool("sim")
    factories.node(pool, "sim-1")
    dept = factories.department("d")
    proj = factories.project(dept, "p")
    factories.quota(dept, pool, gpus=8)
    factories.quota(proj, pool, gpus=8)
    w = factories.workload(proj, "w", spec={"duration": 60})
    agents.cycle()
    assert _reload(w).status == WorkloadStatus.RUNNING
    assert agents.sent == [] and runs_of(w) == []


def test_an_agent_run_ends_only_when_reported_whatever_its_spec_says(agents, submit, settings):
    settings.AGENT_UNREACHABLE_AFTER = settings.AGENT_LOST_AFTER = 10 * 3600  # agents heard
    w = submit("timed", gpus=1, spec={"duration": 1})
    agents.cycle()
    (run,) = runs_of(w)
    agents.report(run, "running")
    later = timezone.now() + timedelta(hours=1)
    agents.settle(tick, now=later)
    agents.settle(run_cycle, now=later)
    assert _reload(w).status == WorkloadStatus.RUNNING


def test_a_start_nothing_was_heard_of_is_sent_again_with_a_new_epoch(
    agents, submit, agent_cluster, settings
):
    """A start frame lost on the way: after RUN_START_RESEND_AFTER seconds of silence the
    reconcile (each tick, each cycle) sends it again with a new epoch, once per interval;
    the run's reports under either epoch count, a repeat of the agent's old state
    included, and the workload runs once."""
    settings.RUN_START_RESEND_AFTER = 10
    w = submit("lost-start", gpus=1)
    agents.cycle()
    (run,) = runs_of(w)
    first_epoch = run.epoch
    mark = len(agents.sent)
    agents.settle(reconcile)
    assert agents.starts(mark) == []  # not overdue yet
    type(run).objects.filter(pk=run.pk).update(start_sent_at=timezone.now() - timedelta(seconds=11))
    agents.settle(reconcile)
    (again,) = agents.starts(mark)
    run.refresh_from_db()
    assert again.body["run"] == run.pk and again.body["epoch"] == run.epoch > first_epoch
    assert Node.objects.get(pk=run.node_id).last_epoch == run.epoch
    agents.settle(reconcile)
    assert len(agents.starts(mark)) == 1  # once per interval
    agents.report(run, "running", epoch=first_epoch)  # in flight before the new start
    agents.report(run, "exited", exit_code=0)
    assert _reload(w).status == WorkloadStatus.COMPLETED
    assert len(runs_of(w)) == 1


def test_a_start_is_not_sent_again_once_the_agent_answered(agents, submit, agent_cluster):
    w = submit("answered", gpus=1)
    agents.cycle()
    (run,) = runs_of(w)
    agents.report(run, "running")
    type(run).objects.filter(pk=run.pk).update(start_sent_at=timezone.now() - timedelta(hours=1))
    mark = len(agents.sent)
    agents.settle(reconcile)
    assert agents.starts(mark) == []


def _run_cycle_here() -> None:
    """What the cycle task does, in this process."""
    triggers.cycle_task_started()
    run_scheduling_loop(wait=False)


def test_a_freed_gpu_starts_the_next_pod_from_the_exit_report(
    agents, submit, agent_cluster, autorun_cycles, monkeypatch
):
    """The exit report asks for a cycle at once (coalesced, under the loop lock), and the
    next pending pod's start goes out from it: no runtime tick, no beat."""
    # the cycle task it asks for runs here, in this process, whatever the broker (with
    # REDIS_URL set, tasks would go to a queue no worker of this test reads); Celery's
    # own settings stay untouched (it reads them once, for every later test)
    monkeypatch.setattr(triggers, "send_cycle_task", _run_cycle_here)
    cache.delete(triggers.queued_key())  # no "task queued" mark left by an earlier test
    first = [submit(f"fill-{i}", gpus=4) for i in range(3)]  # the pool's 12 GPUs
    agents.cycle()
    waiting = submit("next", gpus=4)
    agents.cycle()
    assert _reload(waiting).status == WorkloadStatus.PENDING
    (run,) = runs_of(first[0])
    agents.report(run, "running")
    mark = len(agents.sent)
    agents.report(run, "exited", exit_code=0)
    (start,) = agents.starts(mark)
    (placed,) = runs_of(waiting)
    assert start.body["run"] == placed.pk and placed.node_id == run.node_id
    assert _reload(waiting).status == WorkloadStatus.STARTING


def _in_thread(fn) -> threading.Thread:
    def target():
        try:
            fn()
        finally:
            connection.close()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks: PostgreSQL's")
def test_a_usage_report_commits_while_its_node_is_being_reconciled(agents, submit):
    """While a reconcile holds a node and its live runs, the node's agent reports usage
    (rows that refer to both) and its report is stored at once. With full row locks the
    report waited for the reconcile, and when the reconcile then waited for a run that
    such a commit had locked, PostgreSQL broke the deadlock by failing one of them (an
    agent's connection was closed, or the cycle's starts were not sent)."""
    workload = submit("train")
    agents.cycle()
    run = runs_of(workload)[0]
    held, release = threading.Event(), threading.Event()

    def reconciling():
        with transaction.atomic():
            assert lock_nodes([run.node_id], run.node.pool.backend)
            held.set()
            release.wait(10)

    reconciler = _in_thread(reconciling)
    assert held.wait(10)

    def reporting():
        gpus, runs = [GpuUsage(index=0, utilization=50.0)], [RunUsage(run=run.pk, cpu_percent=10)]
        record_usage(node=run.node, at=timezone.now(), gpus=gpus, runs=runs)

    reporter = _in_thread(reporting)
    reporter.join(5)
    stored_meanwhile = not reporter.is_alive()
    release.set()
    reconciler.join(10)
    reporter.join(10)
    assert stored_meanwhile, "the usage report waited for the node's reconcile to end"


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks: PostgreSQL's")
def test_a_start_goes_out_while_another_run_of_its_node_is_being_reported(agents, submit):
    """A cycle's starts for a node do not wait for its agent's report of another run that
    is being stored (in a burst every node's reports are; the reconcile waited for each
    of them when it locked every live run of the node)."""
    first = submit("first")
    agents.cycle()
    (busy,) = runs_of(first)
    held, release = threading.Event(), threading.Event()

    def reporting():
        with transaction.atomic():  # what storing a report of `busy` holds
            PodRun.objects.select_for_update(no_key=True).get(pk=busy.pk)
            held.set()
            release.wait(10)

    reporter = _in_thread(reporting)
    assert held.wait(10)
    try:
        second = submit("second")
        mark = len(agents.sent)
        began = time.monotonic()
        agents.cycle()
        took = time.monotonic() - began
    finally:
        release.set()
        reporter.join(10)
    (run,) = runs_of(second)
    assert run.node_id == busy.node_id  # packed beside it
    assert [m.body["run"] for m in agents.starts(mark)] == [run.pk]
    assert took < 5, f"the start waited {took:.1f} s for the other run's report"


def test_the_tick_sends_only_the_starts_a_cycle_left_owed(agents, agent_cluster, settings):
    """A pod placed a moment ago is its cycle's to start (the reconcile after its commit):
    the runtime tick leaves it alone, so in a burst it does not redo every cycle's work;
    one placed OWED_AFTER seconds ago or more, that no start went out for (the worker
    died after the commit, say), the tick starts."""
    settings.AGENT_UNREACHABLE_AFTER = settings.AGENT_LOST_AFTER = 10 * 3600  # agents heard
    node = agent_cluster["nodes"][0]
    w = factories.running_workload(agent_cluster["vision"], [node])
    agents.settle(tick)
    assert agents.starts() == [] and runs_of(w) == []
    agents.settle(tick, now=timezone.now() + timedelta(seconds=OWED_AFTER))
    assert [m.body["run"] for m in agents.starts()] == [r.pk for r in runs_of(w)]
