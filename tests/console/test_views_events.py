"""Events page: paging beyond the newest 150 by cursor, a time range, search, and times
that say how long ago (the absolute time in a title)."""

from __future__ import annotations

import re
from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from scheduler_core.choices import EventType
from scheduler_core.models import SchedulingEvent
from tests import factories


def _events(cluster, count: int, *, start=None, reason="placed on gpu-1", workload=None):
    """`count` events one minute apart, the newest `start` (now by default)."""
    start = start or timezone.now()
    rows = [
        SchedulingEvent(
            type=EventType.ALLOCATED,
            project=cluster["vision"],
            pool=cluster["pool"],
            workload=workload,
            reason=f"{reason} #{i}",
            created_at=start - timedelta(minutes=i),
        )
        for i in range(count)
    ]
    return SchedulingEvent.objects.bulk_create(rows)


def _ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr data-event-id="(\d+)">', html)]


def _get(client, query: str = "") -> str:
    return client.get(reverse("console:events") + query).content.decode()


def test_pages_go_back_beyond_the_newest_150_without_gaps(client_for, cluster):
    _events(cluster, 320)
    client = client_for("researcher")
    seen: list[int] = []
    html = _get(client)
    pages = 0
    while True:
        pages += 1
        seen += _ids(html)
        found = re.search(r'href="\?(?:[^"]*&amp;)?before=(\d+)"', html)
        if not found:
            break
        html = _get(client, f"?before={found.group(1)}")
    assert pages == 3
    visible = list(
        SchedulingEvent.objects.filter(project=cluster["vision"])
        .order_by("-created_at", "-id")
        .values_list("pk", flat=True)
    )
    assert seen == visible
    assert "data-older" not in html
    assert "new ones are not added to this page" in html


def test_search_matches_reason_and_workload_name(client_for, cluster):
    wl = factories.workload(cluster["vision"], "bert-big")
    _events(cluster, 2, reason="preempted for nlp")
    _events(cluster, 1, reason="placed", workload=wl)
    client = client_for("researcher")
    assert len(_ids(_get(client, "?q=preempted"))) == 2
    assert len(_ids(_get(client, "?q=bert"))) == 1
    assert "data-live-feed" not in _get(client, "?q=bert")


def test_time_range(client_for, cluster):
    now = timezone.localtime()
    _events(cluster, 10, start=now)  # now .. 9 minutes ago
    start = (now - timedelta(minutes=5, seconds=30)).strftime("%Y-%m-%dT%H:%M:%S")
    end = (now - timedelta(minutes=1, seconds=30)).strftime("%Y-%m-%dT%H:%M:%S")
    html = _get(client_for("researcher"), f"?start={start}&end={end}")
    assert len(_ids(html)) == 4  # 2, 3, 4 and 5 minutes ago


def test_times_are_relative_with_the_absolute_time_in_a_title(client_for, cluster):
    _events(cluster, 1, start=timezone.now() - timedelta(minutes=3))
    html = _get(client_for("researcher"))
    assert re.search(
        r'<time datetime="[^"]+" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d" data-reltime="ago">3m', html
    )
    assert "reltime.js" in html


def test_other_projects_events_stay_hidden_on_every_page(client_for, cluster):
    _events(cluster, 5)
    html = _get(client_for("outsider"))
    assert _ids(html) == []


def test_event_pages_queries_do_not_grow(client_for, cluster):
    client = client_for("researcher")

    def count(cursor: int) -> int:
        _get(client, f"?before={cursor}&q=placed")
        with CaptureQueriesContext(connection) as queries:
            _get(client, f"?before={cursor}&q=placed")
        return len(queries)

    few = count(_events(cluster, 5)[2].pk)
    many = _events(cluster, 200, start=timezone.now() - timedelta(days=1))
    assert count(many[2].pk) == few
