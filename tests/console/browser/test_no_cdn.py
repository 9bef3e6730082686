"""Nothing is fetched from another host at run time: the API docs (Redoc's bundle shows a
logo from cdn.redoc.ly) and the console's pages ask only this server."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest


@pytest.mark.parametrize("path", ["/api/redoc/", "/api/docs/", "/", "/workloads/", "/submit/"])
def test_pages_fetch_nothing_from_another_host(live, cluster, path):
    page = live.page("admin")
    asked: list[str] = []  # what reached the network (a request the page's policy blocks
    # is reported too, then fails with "csp" without leaving the browser)
    page.on("requestfinished", lambda request: asked.append(request.url))
    page.on(
        "requestfailed",
        lambda request: "csp" in (request.failure or "").lower() or asked.append(request.url),
    )
    page.goto(f"{live.url}{path}")
    page.wait_for_load_state("networkidle")
    if path == "/api/redoc/":
        page.wait_for_selector("text=Fairway API")  # Redoc drew the schema
        page.wait_for_selector("text=API docs by Redocly")  # where the logo would be
    elsewhere = [url for url in asked if urlsplit(url).netloc != urlsplit(live.url).netloc]
    assert not [u for u in elsewhere if not u.startswith(("data:", "blob:"))], elsewhere
