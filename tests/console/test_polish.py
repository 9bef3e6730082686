"""Small things a user notices: GPU counts in words, readable muted text and GPU digits, a
skip link, the token page's `Bearer` header with copy buttons, links to the API docs and
(for system admins) the Django admin."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from console.templatetags.console_ui import gpu_count

CSS = Path(settings.BASE_DIR) / "static" / "console" / "css" / "console.css"


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (1, "1 GPU"),
        (1.0, "1 GPU"),
        (0.5, "0.5 GPU"),
        (0, "0 GPUs"),
        (4, "4 GPUs"),
        (2.5, "2.5 GPUs"),
    ],
)
def test_gpu_counts_in_words(value, words):
    assert gpu_count(value) == words


def test_a_one_gpu_pod_is_not_called_gpus(client_for, submit):
    workload = submit("vision", "tiny", gpus=1)
    html = client_for("admin").get(reverse("console:workload_detail", args=[workload.pk]))
    text = html.content.decode()
    assert "1 GPU ·" in text
    assert "1 GPUs" not in text


def _colours() -> dict[str, str]:
    return dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{6})", CSS.read_text()))


def _contrast(a: str, b: str) -> float:
    def luminance(colour: str) -> float:
        channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_muted_text_is_readable_on_every_light_surface():
    colours = _colours()
    for surface in ("surface", "bg", "surface-2", "grey-soft", "amber-soft"):
        assert _contrast(colours["text-3"], colours[surface]) >= 4.5, surface


def test_gpu_digits_are_readable_on_every_project_colour():
    colours = _colours()
    for n in range(10):
        assert _contrast("#ffffff", colours[f"p{n}"]) >= 4.5, f"p{n}"


def test_every_page_offers_a_skip_link_to_the_content(client_for, cluster):
    html = client_for("researcher").get(reverse("console:workloads")).content.decode()
    assert '<a class="skip-link" href="#main">Skip to content</a>' in html
    assert '<main id="main">' in html


def test_the_token_page_shows_the_bearer_header_and_copy_buttons(client_for, cluster):
    client = client_for("researcher")
    html = client.get(reverse("console:tokens")).content.decode()
    assert "Authorization: Bearer &lt;key&gt;" in html
    assert reverse("api:redoc") in html
    html = client.post(reverse("console:tokens"), {"name": "laptop"}).content.decode()
    key = html.split('id="new-token-key">', 1)[1].split("<", 1)[0]
    assert f"Authorization: Bearer {key}" in html
    assert 'data-copy="#new-token-key"' in html
    assert client.get("/api/", HTTP_AUTHORIZATION=f"Bearer {key}").status_code != 401


def test_api_docs_for_everyone_and_the_django_admin_for_system_admins(client_for, cluster):
    researcher = client_for("researcher").get(reverse("console:overview")).content.decode()
    admin = client_for("admin").get(reverse("console:overview")).content.decode()
    dept_admin = client_for("dept_admin").get(reverse("console:overview")).content.decode()
    for html in (researcher, admin, dept_admin):
        assert f'href="{reverse("api:redoc")}"' in html
    assert f'href="{reverse("admin:index")}"' in admin
    assert f'href="{reverse("admin:index")}"' not in researcher
    assert f'href="{reverse("admin:index")}"' not in dept_admin
