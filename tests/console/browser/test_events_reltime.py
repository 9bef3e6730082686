"""Events that arrive live say how long ago they happened, and that time ticks, like the
rows the page was drawn with."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from scheduler_core.services.workloads import WorkloadRequest, workload_submit
from tests.console.browser.conftest import backend

SECONDS_AGO = re.compile(r"^\d+s ago$")


def test_a_live_event_shows_a_relative_time_that_ticks(live, cluster):
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
    when = first.locator("time[data-reltime]")
    expect(when).to_have_text(SECONDS_AGO)
    assert when.get_attribute("title"), "the absolute time is kept in the title"
    shown = when.text_content()
    expect(when).not_to_have_text(shown)  # it ticks
    expect(when).to_have_text(SECONDS_AGO)
