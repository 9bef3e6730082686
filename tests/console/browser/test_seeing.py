"""The workload page's output panel follows a pod's output live: chunks recorded after the
page opened appear in order without a reload, and one that arrives after a lost message is
preceded by what was missed (read again through the logs endpoint), nothing twice."""

from __future__ import annotations

from django.db.models import F
from django.utils import timezone
from playwright.sync_api import expect

from scheduler_core.choices import Backend
from scheduler_core.models import LogChunk, PodRun
from scheduler_core.models.agents import PodRunState
from scheduler_core.services.agents import record_log
from tests import factories
from tests.console.browser.conftest import backend


def _running_job(cluster):
    pool = factories.pool("local", backend=Backend.AGENT)
    node = factories.node(pool, "gpu-a", gpu_count=2, last_heartbeat=timezone.now())
    workload = factories.running_workload(cluster["vision"], [node], name="train")
    run = PodRun.objects.create(
        workload=workload, node=node, pod_index=0, epoch=1, state=PodRunState.RUNNING,
        allocation=workload.allocations.get(), started_at=timezone.now(),
    )  # fmt: skip
    record_log(node=node, run_id=run.pk, offset=0, data=b"line 1\n")
    return workload, node, run


def _lose_a_message(run_id: int, data: bytes) -> None:
    """Store output as if its live message never reached the page."""
    run = PodRun.objects.get(pk=run_id)
    LogChunk.objects.create(run=run, offset=run.log_size, data=data)
    PodRun.objects.filter(pk=run_id).update(log_size=F("log_size") + len(data))


def test_output_recorded_after_the_page_opened_appears_in_order_and_a_gap_heals(live, cluster):
    workload, node, run = backend(_running_job, cluster)
    page = live.page("alice")
    page.goto(f"{live.url}/workloads/{workload.pk}/")
    live.wait_live(page)
    page.evaluate("window.__stillHere = true")
    log = page.locator("pre[data-output-log]")
    expect(log).to_have_text("line 1\n")

    backend(record_log, node=node, run_id=run.pk, offset=7, data=b"line 2\n")
    backend(record_log, node=node, run_id=run.pk, offset=14, data=b"line 3 <b>x</b>\n")
    expect(log).to_have_text("line 1\nline 2\nline 3 <b>x</b>\n")

    backend(_lose_a_message, run.pk, b"line 4\n")
    backend(record_log, node=node, run_id=run.pk, offset=37, data=b"line 5\n")
    expect(log).to_have_text("line 1\nline 2\nline 3 <b>x</b>\nline 4\nline 5\n")
    # a resend of what is stored changes nothing
    backend(record_log, node=node, run_id=run.pk, offset=30, data=b"line 4\nline 5\n")
    backend(record_log, node=node, run_id=run.pk, offset=44, data=b"line 6\n")
    expect(log).to_have_text("line 1\nline 2\nline 3 <b>x</b>\nline 4\nline 5\nline 6\n")
    assert page.locator("pre[data-output-log] b").count() == 0  # text, never markup
    assert page.evaluate("window.__stillHere === true"), "the page was reloaded"
    expect(page.locator("[data-run-state]")).to_have_text("running")
