"""Live pages that stay right: an idle socket stays open, a page resyncs on its first
connection, a refresh never wipes what the user types, new rows are counted instead of
pushing the reader's rows away, and a lost connection says so and can be retried at once."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from playwright.sync_api import expect

from scheduler_core.choices import WorkloadStatus
from scheduler_core.models import Workload
from scheduler_core.services.workloads import (
    WorkloadRequest,
    workload_set_priority,
    workload_submit,
)
from tests.console.browser.conftest import backend, run_cycle

EVENTS_SOCKET = re.compile(r".*/ws/events/$")


def mark_no_reload(page) -> None:
    page.evaluate("window.__stillHere = true")


def assert_not_reloaded(page) -> None:
    assert page.evaluate("window.__stillHere === true"), "the page was reloaded"


def submit_as(user, project, name: str, gpus: float = 1) -> Workload:
    return backend(
        lambda: workload_submit(
            user=user, request=WorkloadRequest(project=project, name=name, gpus=gpus)
        )
    )


@pytest.mark.services
def test_an_idle_page_stays_connected_for_30_seconds(live, cluster):
    """Against the real channel layer: nothing is sent for 30 s, the socket stays open (it
    used to be closed with 1011 after 5 s) and an event sent afterwards still arrives."""
    if "redis" not in settings.CHANNEL_LAYERS["default"]["BACKEND"].lower():
        pytest.skip("needs the Redis channel layer: run with REDIS_URL (bin/services start)")
    page = live.page("alice")
    page.goto(f"{live.url}/events/")
    live.wait_live(page)
    mark_no_reload(page)
    reconnects = []  # a closed socket is opened again by the page (after a banner)
    page.on("websocket", lambda socket: reconnects.append(socket.url))

    page.wait_for_timeout(30_000)  # the idle period under test

    assert reconnects == [], "the socket was closed while idle"
    expect(page.locator("#live-status")).to_have_text("Live")
    expect(page.locator("#live-banner")).to_be_hidden()
    submit_as(cluster["researcher"], cluster["vision"], "after-the-quiet")
    expect(page.locator("#event-feed tr").first).to_contain_text("after-the-quiet")
    assert reconnects == []
    assert_not_reloaded(page)


def test_the_page_shown_after_submit_turns_running_without_reload(live, cluster):
    """The scheduler starts the workload after the page is drawn ("Pending") but before its
    socket subscribes: no event will come, so the first connection must resync."""
    page = live.page("alice")
    page.goto(f"{live.url}/submit/")
    page.fill("#id_name", "quick-start")
    page.fill("#id_gpus", "2")
    page.fill("#id_duration", "3600")

    def scheduler_runs_first(socket) -> None:
        run_cycle()
        socket.connect_to_server()

    page.route_web_socket(EVENTS_SOCKET, scheduler_runs_first)
    page.click("button:has-text('Submit workload')")
    page.wait_for_url(re.compile(r"/workloads/\d+/$"))
    mark_no_reload(page)

    status = page.locator("#workload-live [data-cell=status]").first
    expect(status).to_have_text("Running")
    expect(page.locator("#workload-live")).not_to_contain_text("Why it waits")
    expect(page.locator("#workload-live")).to_contain_text("gpu-")
    expect(page.locator("main")).not_to_contain_text("is queued")
    assert_not_reloaded(page)
    assert Workload.objects.get(name="quick-start").status == WorkloadStatus.RUNNING


def test_typing_in_a_field_survives_a_live_refresh(live, cluster):
    workload = submit_as(cluster["researcher"], cluster["vision"], "tuned", gpus=2)
    page = live.page("alice")
    page.goto(f"{live.url}/workloads/{workload.pk}/")
    live.wait_live(page)
    mark_no_reload(page)
    region = page.locator("#workload-live")
    status = region.locator("[data-cell=status]").first
    field = page.locator("#id_priority")
    waiting = page.locator(".live-waiting")

    # Focus in the field holds the refresh; leaving the field applies it.
    field.focus()
    run_cycle()
    expect(waiting).to_contain_text("Newer data is waiting")
    expect(status).to_have_text("Pending")
    expect(field).to_be_focused()
    page.locator("h1").click()
    expect(status).to_have_text("Running")
    expect(waiting).to_be_hidden()

    # A changed value is kept, even after leaving the field, until it is saved.
    field.fill("42")
    page.locator("h1").click()
    backend(
        workload_set_priority,
        user=cluster["admin"],
        workload=Workload.objects.get(pk=workload.pk),
        priority=7,
    )
    expect(waiting).to_contain_text("Newer data is waiting")
    expect(field).to_have_value("42")
    assert_not_reloaded(page)
    page.click("button:has-text('Set priority')")
    expect(page.locator("main")).to_contain_text("Priority of tuned changed")
    assert Workload.objects.get(pk=workload.pk).priority == 42
    expect(page.locator("#id_priority")).to_have_value("42")


def test_the_workloads_list_counts_new_rows_instead_of_growing(live, cluster):
    """Rows of new workloads that pass the filter are counted behind "N new"; the rows the
    reader is looking at do not move until they ask."""
    submit_as(cluster["researcher"], cluster["vision"], "old-1")
    submit_as(cluster["researcher"], cluster["vision"], "old-2")
    page = live.page("admin")
    page.goto(f"{live.url}/workloads/?user=alice")
    live.wait_live(page)
    mark_no_reload(page)
    rows = page.locator("#workload-rows tr")
    before = rows.evaluate_all("rows => rows.map(r => r.dataset.workloadId)")
    assert len(before) == 2

    submit_as(cluster["researcher"], cluster["vision"], "new-1")
    submit_as(cluster["nlp_researcher"], cluster["nlp"], "someone-elses")  # filtered out
    submit_as(cluster["researcher"], cluster["vision"], "new-2")

    new = page.locator("[data-live-new-for=workload-rows]")
    expect(new).to_have_text(re.compile(r"^2 new workloads"))
    assert rows.evaluate_all("rows => rows.map(r => r.dataset.workloadId)") == before
    new.click()
    expect(rows).to_have_count(4)
    expect(page.locator("#workload-rows")).to_contain_text("new-2")
    expect(page.locator("#workload-rows")).not_to_contain_text("someone-elses")
    expect(new).to_be_hidden()
    assert rows.evaluate_all("rows => rows.map(r => r.dataset.workloadId)")[2:] == before
    assert_not_reloaded(page)


def test_a_lost_connection_is_marked_and_can_be_retried_now(live, cluster):
    server = {"up": True}

    def through_the_network(socket) -> None:
        if server["up"]:
            socket.connect_to_server()
        else:
            socket.close()

    page = live.page("alice")
    page.route_web_socket(EVENTS_SOCKET, through_the_network)
    page.goto(f"{live.url}/workloads/")
    live.wait_live(page)
    mark_no_reload(page)
    banner = page.locator("#live-banner")
    expect(banner).to_be_hidden()

    server["up"] = False
    page.evaluate("window.fairwayLive.drop()")
    expect(page.locator("#live-status")).to_have_text("Reconnecting…")
    expect(banner).to_contain_text("may be out of date")
    expect(page.locator("body[data-live-stale]")).to_be_attached()
    # The wait between attempts grows, but never past 5 s.
    expect(banner).to_contain_text(re.compile(r"Trying again in [45] s"), timeout=15_000)
    for _ in range(3):
        text = banner.inner_text()
        seconds = int(re.search(r"Trying again in (\d+) s", text).group(1))
        assert seconds <= 5, text
        page.wait_for_timeout(1000)

    submit_as(cluster["researcher"], cluster["vision"], "while-down")
    # More than 3 s before the next attempt: "Retry now" must not wait for it.
    expect(banner).to_contain_text(re.compile(r"Trying again in [45] s"), timeout=15_000)
    server["up"] = True
    page.click("#live-banner button:has-text('Retry now')")
    expect(page.locator("#live-status")).to_have_text("Live", timeout=2_500)
    expect(banner).to_be_hidden()
    expect(page.locator("body[data-live-stale]")).not_to_be_attached()
    expect(page.locator("[data-live-new-for=workload-rows]")).to_have_text(
        re.compile(r"^1 new workload")
    )
    assert_not_reloaded(page)


def test_new_rows_that_leave_the_filter_are_no_longer_counted(live, cluster):
    """issue 34, item 9: "44 new" stayed up with 2 active workloads, and clicking it added no
    rows. Counted workloads that end before the reader asks for them are counted out; the
    banner then says what "show" adds, and goes down once shown."""
    from scheduler_core.services.workloads import workload_cancel

    page = live.page("alice")
    page.goto(f"{live.url}/workloads/")  # active workloads only, the default
    live.wait_live(page)
    mark_no_reload(page)
    new = page.locator("[data-live-new-for=workload-rows]")
    ids = [submit_as(cluster["researcher"], cluster["vision"], f"quick-{i}").pk for i in range(3)]
    expect(new).to_have_text(re.compile(r"^3 new workloads"))

    for pk in ids[:2]:
        backend(
            lambda pk=pk: workload_cancel(
                user=cluster["researcher"], workload=Workload.objects.get(pk=pk)
            )
        )
    expect(new).to_have_text(re.compile(r"^1 new workload\b"))
    new.click()
    rows = page.locator("#workload-rows tr[data-workload-id]")
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text("quick-2")
    expect(new).to_be_hidden()
    assert_not_reloaded(page)
