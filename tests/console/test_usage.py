"""The Usage page and the usage panel of the workload, node, pool and project pages: GPUs
held against GPUs used over time, hover values, the idlest holders, as each user may see."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from scheduler_core.services.gpu_usage import gpu_usage_roll_up
from tests.usage_samples import usage_story


@pytest.fixture
def story(cluster, settings):
    story = usage_story(cluster["vision"], cluster["nlp"], settings)
    gpu_usage_roll_up()
    return story


def _panel(client, **query) -> str:
    response = client.get(reverse("console:usage_panel"), query)
    assert response.status_code == 200
    return response.content.decode()


def test_the_usage_page_draws_held_against_used_with_hover_values(story, client_for):
    html = client_for("admin").get(reverse("console:usage"), {"window": "7d"}).content.decode()
    assert '<a href="/usage/" aria-current="page">Usage</a>' in html
    assert 'data-chart="gpus"' in html and "data-hover-chart" in html
    first_hour = story.start.strftime("%a %H:%M")
    hover = f"{first_hour} · held 1.50 GPUs · used 0.94 GPUs (63 %) · memory 48.0 / 160.0 GiB"
    assert f'data-hover="{hover}"><title>{hover}</title>' in html
    assert "held (allocated)" in html and "used (busy)" in html


def test_the_idlest_holders_come_first(story, client_for):
    html = _panel(client_for("admin"), pool=story.node.pool.pk, window="7d")
    assert html.index('data-holder="eval"') < html.index('data-holder="train"')
    assert '<td>nlp</td><td class="num">1.00</td><td class="num">0.96</td>' in html
    assert '<td class="num">4 %</td>' in html


def test_another_departments_researcher_cannot_see_its_usage(story, client_for, cluster):
    alice = client_for("researcher")  # vision
    assert (
        alice.get(reverse("console:usage_panel"), {"project": cluster["nlp"].pk}).status_code == 404
    )
    assert alice.get(reverse("console:usage_panel"), {"workload": story.eval.pk}).status_code == 404
    html = _panel(alice, pool=story.node.pool.pk, window="7d")
    assert 'data-holder="train"' in html and 'data-holder="eval"' not in html


def test_the_workload_node_pool_and_project_pages_load_the_panel(story, client_for, cluster):
    admin = client_for("admin")
    pages = {
        "workload": reverse("console:workload_detail", args=[story.train.pk]),
        "node": reverse("console:node_detail", args=[story.node.pk]),
        "pool": reverse("console:pool_detail", args=[story.node.pool.pk]),
        "project": reverse("console:owner_detail", args=["project", cluster["vision"].pk]),
    }
    ids = {"workload": story.train.pk, "node": story.node.pk, "pool": story.node.pool.pk,
           "project": cluster["vision"].pk}  # fmt: skip
    for name, url in pages.items():
        html = admin.get(url).content.decode()
        assert f'hx-get="{reverse("console:usage_panel")}?{name}={ids[name]}"' in html, name


def test_a_workloads_panel_has_no_holders_table_and_a_window_without_samples_says_so(
    story, client_for
):
    admin = client_for("admin")
    html = _panel(admin, workload=story.train.pk, window="24h")
    assert "data-idlest-holders" not in html and 'data-chart="gpus"' in html
    assert "data-usage-empty" in _panel(admin, workload=story.train.pk, window="1h")


def test_quarter_hours_are_labelled_by_time_of_day(story, client_for):
    html = _panel(client_for("admin"), workload=story.train.pk, window="24h")
    quarter = (story.start + timedelta(minutes=15)).strftime("%H:%M")
    assert f'data-hover="{quarter} · held 1.00 GPUs · used 0.90 GPUs (90 %)' in html
