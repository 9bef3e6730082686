"""The live event feed page."""

from __future__ import annotations

from django.urls import reverse

from scheduler_core.choices import EventType
from scheduler_core.live_events.recording import event_record
from tests import factories


def test_feed_is_filtered_by_access_and_choice(client_for, cluster):
    vision = factories.workload(cluster["vision"], "resnet")
    infra = factories.workload(cluster["infra"], "infra-job")
    event_record(type=EventType.SUBMITTED, workload=vision, reason="submitted by alice")
    event_record(
        type=EventType.PREEMPTED, workload=vision, pool=cluster["pool"], reason="reclaimed by nlp"
    )
    event_record(type=EventType.SUBMITTED, workload=infra, reason="submitted by ops")
    client = client_for("researcher")
    html = client.get(reverse("console:events")).content.decode()
    assert "submitted by alice" in html and "reclaimed by nlp" in html
    assert "submitted by ops" not in html
    assert 'data-live-groups="cluster"' in html and "live-names" in html
    html = client.get(reverse("console:events") + "?type=preempted").content.decode()
    assert "reclaimed by nlp" in html and "submitted by alice" not in html
    assert 'data-filter-types="preempted"' in html
    html = client.get(
        reverse("console:events") + f"?project={cluster['vision'].pk}"
    ).content.decode()
    assert f'data-live-groups="project-{cluster["vision"].pk}"' in html
