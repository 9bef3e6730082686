"""The Usage page in Chromium: GPUs held against GPUs used over a week, a step's values shown
when the pointer is over it, the idlest holders, the window switched in place; and the
workload page loading the same panel. Also the README's screenshot of the page."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from playwright.sync_api import expect

from scheduler_core.services.gpu_usage import gpu_usage_roll_up
from tests import factories
from tests.console.browser.conftest import backend
from tests.usage_samples import holding_run, send_samples, usage_story


def a_busier_node(story) -> None:
    """gpu-b: vision's `sweep` holds both GPUs for three hours, busy in waves."""
    node = factories.node(story.node.pool, "gpu-b", gpu_count=2)
    sweep = factories.workload(story.train.project, "sweep", gpus=2)
    holding_run(sweep, node, [0, 1], since=story.start)

    def busy(index: int, at) -> float:
        minute = int((at - story.start).total_seconds() // 60)
        return [85.0, 60.0, 25.0, 70.0, 95.0, 40.0][(minute // 20 + index) % 6]

    send_samples(node, story.start, timezone.now(), busy)


def test_the_usage_page_shows_held_against_used_with_hover_values(live, cluster, settings):
    story = backend(usage_story, cluster["vision"], cluster["nlp"], settings)
    backend(a_busier_node, story)
    backend(gpu_usage_roll_up)
    page = live.page("admin")
    page.goto(f"{live.url}/usage/?node={story.node.pk}&window=7d")
    fits = "(n => n.scrollWidth <= n.clientWidth)(document.querySelector('.nav'))"
    assert page.evaluate(fits), "a system admin's navigation fits a 1440 px screen"
    chart = page.locator('[data-chart="gpus"]')
    expect(chart.locator("svg[data-hover-chart]")).to_be_visible()
    expect(chart.locator(".chart-tip")).to_have_count(0)

    label = timezone.localtime(story.start).strftime("%a %H:%M")
    chart.locator(f'rect[data-hover^="{label} "]').hover()
    tip = chart.locator(".chart-tip")
    expect(tip).to_be_visible()
    expect(tip).to_have_text(
        f"{label} · held 1.50 GPUs · used 0.94 GPUs (63 %) · memory 48.0 / 160.0 GiB"
    )
    holders = page.locator("[data-idlest-holders] tr[data-holder]")
    expect(holders.first).to_contain_text("eval")
    expect(holders.first).to_contain_text("4 %")
    page.mouse.move(5, 5)
    expect(tip).to_be_hidden()

    page.goto(f"{live.url}/usage/?pool={story.node.pool_id}&window=7d")
    page.locator('a[data-window="24h"]').click()
    expect(page.locator('a[data-window="24h"][aria-current="true"]')).to_be_visible()
    assert page.url.endswith("window=7d"), "switched in place, not by a page load"
    expect(page.locator("[data-idlest-holders] tr[data-holder]")).to_have_count(3)
    later = timezone.localtime(story.start + timedelta(minutes=45)).strftime("%H:%M")
    page.locator(f'[data-chart="gpus"] rect[data-hover^="{later} "]').hover()
    expect(page.locator('[data-chart="gpus"] .chart-tip')).to_contain_text("held 3.50 GPUs")
    live.screenshot(page, "usage")

    page.goto(f"{live.url}/workloads/{story.train.pk}/")
    panel = page.locator("#gpu-usage")
    expect(panel).to_contain_text("No GPU samples in the last 1 hour")
    panel.locator('a[data-window="24h"]').click()
    expect(page.locator('#gpu-usage [data-chart="gpus"] svg')).to_be_visible()
    expect(page.locator("#gpu-usage [data-idlest-holders]")).to_have_count(0)
