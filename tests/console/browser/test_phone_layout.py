"""The console on a phone (390 x 844): no page scrolls sideways (wide tables scroll inside
their card), and every navigation link is reachable through the menu button."""

from __future__ import annotations

import re

from django.core.management import call_command
from playwright.sync_api import expect

from scheduler_core.models import Node, Workload
from tests.console.browser.conftest import backend, run_cycle

WIDTH = 390


def page_overflow(page) -> int:
    """How many pixels the page is wider than the screen (0: it fits)."""
    return page.evaluate("document.documentElement.scrollWidth") - WIDTH


def test_main_pages_fit_a_phone_and_the_menu_opens_every_link(live):
    backend(call_command, "seed_demo", verbosity=0)
    run_cycle()
    admin = live.page("admin", password="fairway-admin", width=WIDTH, height=844)
    workload = Workload.objects.filter(status="running").first()
    node = Node.objects.order_by("name").first()
    paths = [
        "/",
        "/queue/",
        "/workloads/",
        f"/workloads/{workload.pk}/",
        "/nodes/",
        "/nodes/list/",
        f"/nodes/{node.pk}/",
        "/events/",
        "/submit/",
        "/quotas/",
    ]
    too_wide = {}
    for path in paths:
        admin.goto(live.url + path)
        expect(admin.locator("h1").first).to_be_visible()
        if page_overflow(admin) > 0:
            too_wide[path] = page_overflow(admin)
    assert too_wide == {}, f"pages wider than {WIDTH}px (by px): {too_wide}"

    admin.goto(live.url + "/queue/")
    links = admin.locator("nav.nav a")
    assert links.count() >= 8
    expect(links.first).to_be_hidden()
    menu = admin.get_by_role("button", name="Menu")
    expect(menu).to_have_attribute("aria-expanded", "false")
    menu.click()
    expect(menu).to_have_attribute("aria-expanded", "true")
    for i in range(links.count()):
        link = links.nth(i)
        expect(link).to_be_visible()
        box = link.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= WIDTH, link.text_content()
    expect(admin.get_by_role("button", name="Sign out")).to_be_visible()
    assert page_overflow(admin) <= 0
    links.filter(has_text=re.compile("^Events$")).click()
    admin.wait_for_url(f"{live.url}/events/")
    expect(admin.locator("h1")).to_have_text("Events")


def test_wide_tables_scroll_inside_their_card_on_a_phone(live):
    backend(call_command, "seed_demo", verbosity=0)
    run_cycle()
    admin = live.page("admin", password="fairway-admin", width=WIDTH, height=844)
    admin.goto(live.url + "/workloads/")
    wrap = admin.locator("#workloads-table").locator("xpath=..")
    scroll = wrap.evaluate("el => [el.scrollWidth, el.clientWidth]")
    assert scroll[0] > scroll[1], "the workloads table fits a phone: nothing to prove"
    assert page_overflow(admin) <= 0


def test_desktop_shows_the_links_without_a_menu(live, cluster):
    page = live.page("admin")
    expect(page.locator("nav.nav a").first).to_be_visible()
    expect(page.get_by_role("button", name="Menu")).to_be_hidden()
