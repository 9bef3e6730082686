"""Smaller things a Chromium audit found (issue 34, item 12): the workloads' bulk-action
bar, the pods table's last column, the queue's reason on a phone, names of the nodes'
buttons for screen readers, and the submit preview announced as it changes."""

from __future__ import annotations

import re

from django.core.management import call_command
from playwright.sync_api import expect

from scheduler_core.models import Workload
from tests.console.browser.conftest import backend, run_cycle, submit

PHONE = 390


def overflow(page, selector: str) -> int:
    """How many pixels the content of `selector` is wider than its box (0: it fits)."""
    return page.evaluate(
        "s => { const e = document.querySelector(s); return e.scrollWidth - e.clientWidth; }",
        selector,
    )


def test_the_bulk_bar_is_one_row_with_the_priority_field_only_when_it_applies(live, cluster):
    submit(cluster, "vision", "one", 1)
    page = live.page("alice")
    page.goto(f"{live.url}/workloads/")
    bar = page.locator("[data-bulk-bar]")
    expect(bar).to_be_visible()
    priority = page.locator("#bulk-priority")
    expect(priority).to_be_hidden()  # "Cancel" is chosen: no priority to type
    middles = [
        (box := page.locator(sel).bounding_box())["y"] + box["height"] / 2
        for sel in ("[data-bulk-count]", "#bulk-action", "[data-bulk-submit]")
    ]
    assert max(middles) - min(middles) < 12, f"the bar's controls are on one row: {middles}"
    assert bar.bounding_box()["height"] < 60
    assert page.locator("#bulk-action").bounding_box()["width"] < 300
    page.select_option("#bulk-action", "priority")
    expect(priority).to_be_visible()


def test_the_pods_table_shows_its_last_column_inside_its_card(live):
    backend(call_command, "seed_demo", verbosity=0)
    run_cycle()
    workload = Workload.objects.filter(status="running", pods__gt=1).first()
    page = live.page("admin", password="fairway-admin", width=1100)
    page.goto(f"{live.url}/workloads/{workload.pk}/")
    expect(page.locator(".pods-table th").last).to_have_text("Process")
    assert overflow(page, ".pods-table") <= 0 or overflow(page, ":has(> .pods-table)") <= 0


def test_the_queue_says_why_on_a_phone_without_scrolling_sideways(live, cluster):
    for name in ("fills", "fills-too", "waits"):
        submit(cluster, "vision", name, 8)
    run_cycle()  # the pool (16 GPUs) is full: "waits" waits
    page = live.page("alice", width=PHONE, height=844)
    page.goto(f"{live.url}/queue/")
    live.wait_live(page)  # the live region has been fetched again once
    reason = page.locator("[data-pool=a100] td.reason").first
    expect(reason).to_be_visible()
    expect(reason).not_to_be_empty()
    left, right = reason.evaluate(
        "e => { const r = e.getBoundingClientRect(); return [r.left, r.right]; }"
    )
    assert left >= 0 and right <= PHONE, (left, right)


def test_each_node_button_names_its_node(live, cluster):
    for name in ("on-one", "on-two"):
        submit(cluster, "vision", name, 8)
    run_cycle()  # both nodes in use: each offers Cordon and Drain
    page = live.page("admin")
    for path in ("/nodes/", "/nodes/list/", f"/pools/{cluster['pool'].pk}/"):
        page.goto(f"{live.url}{path}")
        for action in ("Cordon", "Drain"):
            buttons = page.get_by_role("button", name=re.compile(rf"^{action} "))
            expect(buttons.first).to_be_visible()
            names = [b.get_attribute("aria-label") for b in buttons.all()]
            assert sorted(names) == [f"{action} gpu-1", f"{action} gpu-2"], (path, names)


def test_the_submit_preview_is_announced_as_it_changes(live, cluster):
    page = live.page("alice")
    page.goto(f"{live.url}/submit/")
    preview = page.locator("#submit-preview")
    expect(preview).to_have_attribute("aria-live", "polite")
    page.fill("#id_gpus", "9")
    expect(preview).to_contain_text("never fits")
