"""Static files and pages as a browser receives them: hashed static names cached for good
and sent brotli- or gzip-compressed (after `collectstatic`, as bin/setup runs it), plain
names before it, and pages gzipped for clients that accept it."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import brotli
import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from config import settings as product_settings

CSS = "console/css/console.css"
HASHED_CSS = re.compile(r'href="(/static/console/css/console\.[0-9a-f]{12}\.css)"')
HASHED_HTMX = re.compile(r'src="(/static/vendor/htmx/htmx\.min\.[0-9a-f]{12}\.js)"')


def _body(response) -> bytes:
    if response.streaming:
        return b"".join(response.streaming_content)
    return response.content


@pytest.fixture
def collected(settings, tmp_path):
    """`collectstatic` into an empty STATIC_ROOT with the product's storage. Only the
    project's own folders (the console and htmx) are collected: the admin's and the API
    docs' files take a minute of brotli and prove nothing more."""
    settings.STORAGES = product_settings.STORAGES
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STATICFILES_FINDERS = ["django.contrib.staticfiles.finders.FileSystemFinder"]
    call_command("collectstatic", "--noinput", verbosity=0)
    return Path(settings.STATIC_ROOT)


@pytest.mark.django_db
def test_collected_console_css_is_hashed_cached_for_good_and_compressed(collected):
    page = Client().get("/login/")
    assert page.status_code == 200
    css_url = HASHED_CSS.search(page.content.decode()).group(1)
    source = (Path(settings.BASE_DIR) / "static" / CSS).read_bytes()

    as_brotli = Client().get(css_url, HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert as_brotli.status_code == 200
    assert as_brotli["Content-Encoding"] == "br"
    assert "immutable" in as_brotli["Cache-Control"]
    max_age = int(re.search(r"max-age=(\d+)", as_brotli["Cache-Control"]).group(1))
    assert max_age >= 365 * 24 * 3600
    assert as_brotli["Content-Type"].startswith("text/css")
    assert brotli.decompress(_body(as_brotli)) == source

    as_gzip = Client().get(css_url, HTTP_ACCEPT_ENCODING="gzip")
    assert as_gzip["Content-Encoding"] == "gzip"
    assert gzip.decompress(_body(as_gzip)) == source

    plain = Client().get(css_url)
    assert not plain.has_header("Content-Encoding")
    assert _body(plain) == source


@pytest.mark.django_db
def test_signed_in_pages_reference_hashed_htmx(collected, cluster):
    client = Client()
    client.force_login(cluster["admin"])
    page = client.get("/")
    htmx_url = HASHED_HTMX.search(page.content.decode()).group(1)
    script = client.get(htmx_url, HTTP_ACCEPT_ENCODING="br")
    assert script.status_code == 200
    assert script["Content-Encoding"] == "br"
    assert "immutable" in script["Cache-Control"]


@pytest.mark.django_db
def test_without_collectstatic_pages_use_plain_names_that_are_served(settings, tmp_path):
    """A fresh clone before `collectstatic`: nothing breaks."""
    settings.STORAGES = product_settings.STORAGES
    settings.STATIC_ROOT = tmp_path / "empty"
    settings.STATIC_ROOT.mkdir()
    page = Client().get("/login/")
    assert page.status_code == 200
    assert f'href="/static/{CSS}"' in page.content.decode()
    css = Client().get(f"/static/{CSS}")
    assert css.status_code == 200
    assert "immutable" not in css.get("Cache-Control", "")


@pytest.mark.django_db
def test_console_page_is_gzipped_when_the_browser_accepts_it(cluster):
    client = Client()
    client.force_login(cluster["admin"])
    plain = client.get("/queue/")
    zipped = client.get("/queue/", HTTP_ACCEPT_ENCODING="gzip, deflate, br")
    assert not plain.has_header("Content-Encoding")
    assert zipped["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in zipped["Vary"]
    html = gzip.decompress(zipped.content).decode()
    assert "<title>" in html and "Queue" in html


@pytest.mark.django_db
def test_api_answer_is_gzipped_when_the_client_accepts_it(cluster, submit):
    submit("vision", "train-resnet")  # an answer long enough to be worth compressing
    client = Client()
    client.force_login(cluster["admin"])
    zipped = client.get("/api/v1/workloads/", HTTP_ACCEPT_ENCODING="gzip")
    assert zipped.status_code == 200
    assert zipped["Content-Encoding"] == "gzip"
    assert b'"train-resnet"' in gzip.decompress(zipped.content)
