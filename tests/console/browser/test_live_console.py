"""The console in a real browser: live updates over the websocket, without reloads."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from scheduler_core.choices import WorkloadStatus
from scheduler_core.models import Quota, Workload
from scheduler_core.services.workloads import WorkloadRequest, workload_submit
from tests.console.browser.conftest import backend, run_cycle

SECONDS_AGO = re.compile(r"^\d+s ago$")


def mark_no_reload(page) -> None:
    page.evaluate("window.__stillHere = true")


def assert_not_reloaded(page) -> None:
    assert page.evaluate("window.__stillHere === true"), "the page was reloaded"


def test_researcher_submits_and_watches_pending_then_running(live, cluster):
    page = live.page("alice")
    page.goto(f"{live.url}/submit/")
    page.fill("#id_name", "resnet-50")
    page.fill("#id_pods", "2")
    page.fill("#id_gpus", "4")
    page.fill("#id_duration", "3600")
    expect(page.locator("#submit-preview")).to_contain_text("fits now")
    page.click("button:has-text('Submit workload')")
    page.wait_for_url(re.compile(r"/workloads/\d+/$"))
    status = page.locator("#workload-live [data-cell=status]").first
    expect(status).to_have_text("Pending")
    live.wait_live(page)
    mark_no_reload(page)

    run_cycle()

    expect(status).to_have_text("Running")
    expect(page.locator("#workload-live")).to_contain_text("gpu-")
    assert_not_reloaded(page)
    workload = Workload.objects.get(name="resnet-50")
    assert workload.status == WorkloadStatus.RUNNING


def test_preemption_by_another_users_submission_appears_live(live, cluster):
    """alice's over-quota work is reclaimed when bob's project asks for its quota."""
    vision, nlp = cluster["vision"], cluster["nlp"]

    def alice_fills_the_pool():
        return [
            workload_submit(
                user=cluster["researcher"],
                request=WorkloadRequest(project=vision, name=f"train-{i}", gpus=4),
            ).pk
            for i in range(4)
        ]

    ids = backend(alice_fills_the_pool)
    run_cycle()
    assert set(Workload.objects.values_list("status", flat=True)) == {WorkloadStatus.RUNNING}

    page = live.page("alice")
    page.goto(f"{live.url}/workloads/")
    statuses = page.locator("#workload-rows [data-cell=status]")
    expect(statuses.filter(has_text="Running")).to_have_count(4)
    live.wait_live(page)
    mark_no_reload(page)
    order = page.locator("#workload-rows tr").evaluate_all(
        "rows => rows.map(r => r.dataset.workloadId)"
    )

    backend(
        lambda: workload_submit(
            user=cluster["nlp_researcher"],
            request=WorkloadRequest(project=nlp, name="bert", gpus=4),
        )
    )
    run_cycle()

    expect(statuses.filter(has_text="Pending")).to_have_count(1)
    expect(page.locator("#toasts")).to_contain_text("was preempted")
    preempted = Workload.objects.get(pk__in=ids, status=WorkloadStatus.PENDING)
    row = page.locator(f'tr[data-workload-id="{preempted.pk}"]')
    expect(row.locator("[data-cell=reason]")).not_to_be_empty()
    # how often it was preempted, counted in place from the event
    expect(row.locator("[data-cell=preemptions]")).to_have_text("1")
    assert_not_reloaded(page)
    # rows are keyed by id and updated in place: nothing moved
    assert (
        page.locator("#workload-rows tr").evaluate_all(
            "rows => rows.map(r => r.dataset.workloadId)"
        )
        == order
    )
    live.screenshot(page, "workloads-preempted")


def test_admin_edits_a_quota_and_sees_the_effect(live, cluster):
    vision, pool = cluster["vision"], cluster["pool"]
    page = live.page("admin")
    page.goto(f"{live.url}/quotas/")
    key = f"project-{vision.pk}-{pool.pk}"
    row = page.locator(f"#q-{key}")
    row.locator(f"#id_{key}-gpus").fill("6")
    row.locator(f"#id_{key}-limit_gpus").fill("3")
    row.locator("button:has-text('Save')").click()
    expect(page.locator(f"#q-{key}")).to_contain_text("must be at least the deserved quota")
    assert Quota.objects.get(project=vision, pool=pool).gpus == 8

    row = page.locator(f"#q-{key}")
    row.locator(f"#id_{key}-limit_gpus").fill("")
    row.locator("button:has-text('What if?')").click()
    panel = page.locator(f"#q-{key} + tr.whatif-row")
    expect(panel).to_contain_text("vision")
    expect(panel.locator("[data-whatif-now]")).to_be_visible()

    page.locator(f"#q-{key}").locator("button:has-text('Save')").click()
    expect(page.locator(f"#q-{key}")).to_contain_text("Saved.")
    assert Quota.objects.get(project=vision, pool=pool).gpus == 6

    page.goto(f"{live.url}/")
    queue_row = page.locator(f'tr[data-queue="project-{vision.pk}"]')
    run_cycle()
    page.reload()
    expect(queue_row).to_contain_text("6")


def test_researcher_cannot_reach_the_quota_page(live, cluster):
    page = live.page("alice")
    expect(page.locator("nav.nav")).not_to_contain_text("Quotas")
    response = page.goto(f"{live.url}/quotas/")
    assert response.status == 403
    expect(page.locator("h1")).to_have_text("You can't do that")


def test_events_feed_prepends_new_events(live, cluster):
    page = live.page("alice")
    page.goto(f"{live.url}/events/")
    live.wait_live(page)
    backend(
        lambda: workload_submit(
            user=cluster["researcher"],
            request=WorkloadRequest(project=cluster["vision"], name="fresh", gpus=1),
        )
    )
    first = page.locator("#event-feed tr").first
    expect(first).to_contain_text("fresh")
    expect(first).to_contain_text("Submitted")
    # it says how long ago it happened, and that time ticks, like the rows drawn at load
    when = first.locator("time[data-reltime]")
    expect(when).to_have_text(SECONDS_AGO)
    assert when.get_attribute("title"), "the absolute time is kept in the title"
    shown = when.text_content()
    expect(when).not_to_have_text(shown)  # it ticks
    expect(when).to_have_text(SECONDS_AGO)


@pytest.mark.parametrize(
    ("path", "where", "pattern"),
    [
        ("/workloads/", "#workload-rows", SECONDS_AGO),
        ("/queue/", "[data-pool=a100]", re.compile(r"^\d+s$")),
        ("/workloads/{id}/", "#workload-live", SECONDS_AGO),
    ],
)
def test_relative_times_tick_on_every_page(live, cluster, path, where, pattern):
    """issue 34, item 12: "0s ago" ticked only on the Events page."""
    waits = backend(
        lambda: workload_submit(
            user=cluster["researcher"],
            request=WorkloadRequest(project=cluster["vision"], name="waits", gpus=8),
        )
    )
    page = live.page("alice")
    page.goto(f"{live.url}{path.format(id=waits.pk)}")
    when = page.locator(f"{where} time[data-reltime]").first
    expect(when).to_have_text(pattern)
    shown = when.text_content()
    expect(when).not_to_have_text(shown)  # it ticks, without a reload
    expect(when).to_have_text(pattern)


def test_after_a_drop_the_page_reconnects_and_resyncs(live, cluster):
    page = live.page("alice")
    page.goto(f"{live.url}/workloads/")
    live.wait_live(page)
    mark_no_reload(page)
    page.evaluate(
        """() => {
        document.getElementById("workload-rows").addEventListener(
            "live:refreshed", () => { window.__resynced = true; });
        document.body.removeAttribute("data-live-ready");
        window.fairwayLive.drop();
    }"""
    )
    expect(page.locator("#live-status")).to_have_text("Reconnecting…")
    backend(
        lambda: workload_submit(
            user=cluster["researcher"],
            request=WorkloadRequest(project=cluster["vision"], name="while-away", gpus=1),
        )
    )
    live.wait_live(page)
    expect(page.locator("#live-status")).to_have_text("Live")
    # what arrived while away is counted, not pushed into the rows being read
    expect(page.locator("#workload-rows")).not_to_contain_text("while-away")
    page.click("text=1 new workload")
    expect(page.locator("#workload-rows")).to_contain_text("while-away")
    assert page.evaluate("window.__resynced === true")
    assert_not_reloaded(page)
