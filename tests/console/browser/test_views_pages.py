"""The views people expect, in Chromium: one position per workload in a pool's queue,
sorting and search on the workloads list, bulk cancel, events paged beyond the newest 150,
and cordon / drain on the nodes list without a reload (drain asking first)."""

from __future__ import annotations

import re
from datetime import timedelta

from django.utils import timezone
from playwright.sync_api import expect

from scheduler_core.choices import EventType, NodeState, WorkloadStatus
from scheduler_core.models import Node, SchedulingEvent, Workload
from tests import factories
from tests.console.browser.conftest import backend


def mark_no_reload(page) -> None:
    page.evaluate("window.__stillHere = true")


def assert_not_reloaded(page) -> None:
    assert page.evaluate("window.__stillHere === true"), "the page was reloaded"


def _pending(project, name, position, **kwargs):
    return backend(
        factories.workload,
        project,
        name,
        status=WorkloadStatus.PENDING,
        queue_position=position,
        **kwargs,
    )


def test_queue_positions_are_unique_in_a_pool(live, cluster):
    for project, name, position in [
        ("vision", "vis-a", 1),
        ("vision", "vis-b", 2),
        ("nlp", "nlp-a", 1),
        ("nlp", "nlp-b", 2),
    ]:
        _pending(cluster[project], name, position)
    page = live.page("admin")
    page.goto(f"{live.url}/queue/")
    cells = page.locator('[data-pool="a100"] [data-cell=position]')
    expect(cells).to_have_count(4)
    assert cells.all_text_contents() == ["#1", "#2", "#3", "#4"]
    ahead = page.locator('[data-pool="a100"] [data-cell=ahead]').all_text_contents()
    assert ahead == ["0", "1", "2", "3"]


def test_workloads_list_sorts_and_searches_as_you_type(live, cluster):
    for name, gpus in [("bravo-train", 2), ("alpha-eval", 4), ("charlie-train", 1)]:
        backend(factories.workload, cluster["vision"], name, gpus=gpus)
    page = live.page("alice")
    page.goto(f"{live.url}/workloads/")
    live.wait_live(page)
    names = page.locator("#workload-rows td.name a")
    page.click("a.sort-link[data-sort=Workload]")
    expect(names).to_have_text(["alpha-eval", "bravo-train", "charlie-train"])
    page.click("a.sort-link[data-sort=Workload]")
    expect(names).to_have_text(["charlie-train", "bravo-train", "alpha-eval"])
    page.click("a.sort-link[data-sort=GPUs]")
    expect(names).to_have_text(["charlie-train", "bravo-train", "alpha-eval"])
    mark_no_reload(page)
    page.fill("#id_q", "train")  # no Apply button: the list follows the typing
    expect(names).to_have_text(["charlie-train", "bravo-train"])
    expect(page.locator("#id_q")).to_be_focused()
    assert "q=train" in page.url and "sort=gpus" in page.url
    assert_not_reloaded(page)


def test_bulk_cancel_from_ticked_rows(live, cluster):
    keep = backend(factories.workload, cluster["vision"], "keep-me")
    for name in ("drop-1", "drop-2"):
        backend(factories.workload, cluster["vision"], name)
    page = live.page("alice")
    page.goto(f"{live.url}/workloads/")
    live.wait_live(page)
    page.get_by_label("Tick drop-1").check()
    page.get_by_label("Tick drop-2").check()
    expect(page.locator("[data-bulk-count]")).to_have_text("2 ticked")
    dialogs = []
    page.once("dialog", lambda d: (dialogs.append(d.message), d.accept()))
    page.click("[data-bulk-submit]")
    expect(page.locator(".notice.ok")).to_contain_text(
        re.compile(r"Cancelled 2: (drop-1, drop-2|drop-2, drop-1)\.")
    )
    assert dialogs and "Cancel 2 workloads?" in dialogs[0]
    # active only by default: the cancelled rows are gone, the other stays
    expect(page.locator("#workload-rows td.name a")).to_have_text(["keep-me"])
    statuses = dict(Workload.objects.values_list("name", "status"))
    assert statuses["drop-1"] == statuses["drop-2"] == WorkloadStatus.CANCELLED
    assert statuses[keep.name] == WorkloadStatus.PENDING


def test_events_page_beyond_the_newest_150(live, cluster):
    now = timezone.now()
    backend(
        SchedulingEvent.objects.bulk_create,
        [
            SchedulingEvent(
                type=EventType.ALLOCATED,
                project=cluster["vision"],
                pool=cluster["pool"],
                reason=f"event number {i}",
                created_at=now - timedelta(minutes=i),
            )
            for i in range(170)
        ],
    )
    page = live.page("alice")
    page.goto(f"{live.url}/events/")
    rows = page.locator("#event-feed tr[data-event-id]")
    expect(rows).to_have_count(150)
    expect(rows.first).to_contain_text("event number 0")
    expect(rows.first.locator("time")).to_have_attribute("title", re.compile(r"\d{4}-\d\d-\d\d"))
    page.click("a[data-older]")
    expect(rows).to_have_count(20)
    expect(rows.first).to_contain_text("event number 150")
    expect(rows.last).to_contain_text("event number 169")
    expect(page.locator("a[data-older]")).to_have_count(0)


def test_cordon_without_reload_and_drain_of_a_cordoned_node_asks_first(live, cluster):
    node = cluster["nodes"][0]
    w = backend(factories.running_workload, cluster["vision"], [node], name="resnet")
    page = live.page("admin")
    page.goto(f"{live.url}/nodes/list/")
    live.wait_live(page)
    mark_no_reload(page)
    row = page.locator('tr[data-node="gpu-1"]')
    expect(row).to_contain_text("vision/resnet")
    row.get_by_role("button", name="Cordon").click()
    expect(row).to_have_attribute("data-state", "cordoned")
    expect(row).to_contain_text("gpu-1 is cordoned")
    assert Node.objects.get(pk=node.pk).state == NodeState.CORDONED

    # Drain asks first; dismissing it changes nothing
    asked = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    row.get_by_role("button", name="Drain").click()
    expect(row).to_contain_text("gpu-1 is cordoned")
    assert asked and "already cordoned" in asked[0]
    assert Workload.objects.get(pk=w.pk).status == WorkloadStatus.RUNNING

    page.once("dialog", lambda d: d.accept())
    row.get_by_role("button", name="Drain").click()
    expect(row).to_contain_text("gpu-1 is drained")
    assert Workload.objects.get(pk=w.pk).status == WorkloadStatus.PENDING
    assert_not_reloaded(page)
