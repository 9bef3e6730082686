"""The quotas page is live: what each queue holds and its fair share change as the scheduler
works, without a reload, even while a row is being edited."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.console.browser.conftest import settle, submit


def test_held_and_fair_share_figures_change_live_while_a_row_is_edited(live, cluster):
    page = live.page("admin")
    page.goto(f"{live.url}/quotas/")
    live.wait_live(page)
    page.evaluate("window.__stillHere = true")
    vision, pool = cluster["vision"], cluster["pool"]
    vision_key = f"project-{vision.pk}-{pool.pk}"
    now = page.locator(f"#now-{vision_key}")
    expect(now).to_contain_text("0 held")
    nlp_key = f"project-{cluster['nlp'].pk}-{pool.pk}"
    page.locator(f"#id_{nlp_key}-gpus").fill("6")  # an edit in progress elsewhere

    submit(cluster, "vision", "vision-train", 8)
    settle()

    expect(now).to_contain_text("8 held")
    assert page.evaluate("window.__stillHere === true"), "the page was reloaded"
    expect(page.locator(f"#id_{nlp_key}-gpus")).to_have_value("6")  # the edit is kept
