"""Workloads list: search, sortable columns, pool and run-time columns, active-only by
default, and bulk cancel / priority with what failed said per workload."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from scheduler_core.choices import WorkloadStatus
from scheduler_core.models import Workload
from tests import factories


@pytest.fixture
def listed(cluster):
    now = timezone.now()
    long_run = factories.running_workload(
        cluster["vision"], cluster["nodes"][:1], name="alpha-train", gpus=4
    )
    long_run.started_at = now - timedelta(hours=3)
    long_run.save()
    short_run = factories.running_workload(
        cluster["vision"], cluster["nodes"][1:], name="zeta-train", gpus=2
    )
    short_run.started_at = now - timedelta(minutes=5)
    short_run.save()
    pending = factories.workload(cluster["vision"], "bert-big", gpus=8, submitted_at=now)
    done = factories.workload(
        cluster["vision"],
        "old-eval",
        status=WorkloadStatus.COMPLETED,
        started_at=now - timedelta(days=1),
        finished_at=now - timedelta(days=1) + timedelta(minutes=30),
        submitted_at=now - timedelta(days=1),
    )
    return {"long": long_run, "short": short_run, "pending": pending, "done": done}


def _names(html: str) -> list[str]:
    return re.findall(r'<td class="name"><a href="/workloads/\d+/">([^<]+)</a>', html)


def _get(client, query: str = "") -> str:
    return client.get(reverse("console:workloads") + query).content.decode()


def test_active_only_by_default_and_all_on_request(client_for, listed):
    client = client_for("researcher")
    assert "old-eval" not in _names(_get(client))
    assert "old-eval" in _names(_get(client, "?status=all"))
    assert _names(_get(client, "?status=completed")) == ["old-eval"]


def test_search_by_name(client_for, listed):
    assert sorted(_names(_get(client_for("researcher"), "?q=train"))) == [
        "alpha-train",
        "zeta-train",
    ]


@pytest.mark.parametrize(
    ("sort", "expected"),
    [
        ("name", ["alpha-train", "bert-big", "zeta-train"]),
        ("-name", ["zeta-train", "bert-big", "alpha-train"]),
        ("-gpus", ["bert-big", "alpha-train", "zeta-train"]),
        ("-runtime", ["alpha-train", "zeta-train", "bert-big"]),
        ("runtime", ["zeta-train", "alpha-train", "bert-big"]),  # not started: last
    ],
)
def test_columns_sort_both_ways(client_for, listed, sort, expected):
    assert _names(_get(client_for("researcher"), f"?sort={sort}")) == expected


def test_a_sorted_heading_links_to_the_other_direction(client_for, listed):
    html = _get(client_for("researcher"), "?sort=name&q=t")
    assert 'aria-sort="ascending"' in html
    assert 'href="?sort=-name&amp;q=t"' in html or 'href="?q=t&amp;sort=-name"' in html


def test_pool_and_run_time_columns_and_pool_filter(client_for, cluster, listed):
    other = factories.pool("h100")
    factories.node(other, "h-1")
    html = _get(client_for("researcher"))
    row = html.split(f'data-workload-id="{listed["long"].pk}"', 1)[1].split("</tr>", 1)[0]
    assert "a100" in row
    assert "3h 00m" in row
    assert _names(_get(client_for("researcher"), f"?pool={other.pk}")) == []
    assert "alpha-train" in _names(_get(client_for("researcher"), f"?pool={cluster['pool'].pk}"))


def test_the_list_shows_how_often_a_workload_was_preempted_and_sorts_by_it(client_for, listed):
    Workload.objects.filter(pk=listed["short"].pk).update(preemptions=3)
    Workload.objects.filter(pk=listed["pending"].pk).update(preemptions=1)
    client = client_for("researcher")
    html = _get(client)
    assert ">Preempted</a>" in html

    def cell(workload: Workload) -> str:
        row = html.split(f'data-workload-id="{workload.pk}"', 1)[1].split("</tr>", 1)[0]
        return re.search(r'data-cell="preemptions"[^>]*>([^<]*)<', row).group(1)  # type: ignore[union-attr]

    assert cell(listed["short"]) == "3"
    assert cell(listed["pending"]) == "1"
    assert cell(listed["long"]) == "—"
    assert _names(_get(client, "?sort=-preemptions")) == ["zeta-train", "bert-big", "alpha-train"]


def test_a_workload_back_in_the_queue_shows_no_run_time(client_for, listed):
    # preempted 5 minutes into its run: while it waits, that old run is no run time, and
    # sorting by run time puts it with the others that are not running
    Workload.objects.filter(pk=listed["short"].pk).update(status=WorkloadStatus.PENDING)
    client = client_for("researcher")
    html = _get(client)
    row = html.split(f'data-workload-id="{listed["short"].pk}"', 1)[1].split("</tr>", 1)[0]
    assert "5m" not in row
    assert _names(_get(client, "?sort=-runtime"))[0] == "alpha-train"
    assert set(_names(_get(client, "?sort=-runtime"))[1:]) == {"zeta-train", "bert-big"}


def test_bulk_cancel_reports_each_failure(client_for, listed):
    client = client_for("researcher")
    ids = [listed["long"].pk, listed["pending"].pk, listed["done"].pk]
    response = client.post(
        reverse("console:workload_bulk"),
        {"action": "cancel", "ids": ids, "next": "/workloads/?q=t"},
        follow=True,
    )
    assert response.redirect_chain[-1][0] == "/workloads/?q=t"
    html = response.content.decode()
    assert "Cancelled 2: alpha-train, bert-big." in html
    assert "Not done for 1: old-eval: workload is already completed" in html
    statuses = dict(Workload.objects.filter(pk__in=ids).values_list("name", "status"))
    assert statuses == {
        "alpha-train": "cancelled",
        "bert-big": "cancelled",
        "old-eval": "completed",
    }


def test_bulk_priority_and_what_a_viewer_or_outsider_may_not_do(client_for, cluster, listed):
    infra = factories.workload(cluster["infra"], "infra-job")
    response = client_for("viewer").post(
        reverse("console:workload_bulk"),
        {"action": "priority", "priority": 80, "ids": [listed["pending"].pk, infra.pk]},
        follow=True,
    )
    html = response.content.decode()
    assert "bert-big: you may not act on project vision" in html
    assert f"#{infra.pk}: not found, or you cannot see it" in html
    listed["pending"].refresh_from_db()
    assert listed["pending"].priority != 80
    client_for("researcher").post(
        reverse("console:workload_bulk"),
        {"action": "priority", "priority": 80, "ids": [listed["pending"].pk]},
    )
    listed["pending"].refresh_from_db()
    assert listed["pending"].priority == 80


def test_viewers_get_no_checkboxes(client_for, listed):
    assert "data-bulk-row" not in _get(client_for("viewer"))
    assert "data-bulk-row" in _get(client_for("researcher"))


def test_priority_without_a_number_is_refused_plainly(client_for, listed):
    response = client_for("researcher").post(
        reverse("console:workload_bulk"),
        {"action": "priority", "ids": [listed["pending"].pk]},
        follow=True,
    )
    assert "Give the new priority as a whole number." in response.content.decode()


@pytest.mark.parametrize("extra", [0, 10])
def test_list_queries_do_not_grow_with_rows(client_for, cluster, listed, extra):
    for i in range(extra):
        factories.running_workload(cluster["vision"], cluster["nodes"][:1], name=f"r{i}")
    client = client_for("researcher")
    _get(client, "?sort=-runtime")
    with CaptureQueriesContext(connection) as queries:
        _get(client, "?sort=-runtime")
    assert len(queries) <= 16
