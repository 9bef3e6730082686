"""Fixtures of the console tests: a signed-in client per role, and queue state as a cycle
would leave it."""

from __future__ import annotations

import pytest
from django.test import Client

from scheduler_core.models import QueueState

ROLES = ("admin", "dept_admin", "researcher", "nlp_researcher", "viewer", "outsider")


@pytest.fixture
def client_for(cluster):
    """`client_for("researcher")` -> a Client signed in as that user of the cluster."""

    def make(role: str) -> Client:
        client = Client()
        client.force_login(cluster[role])
        return client

    return make


@pytest.fixture
def queue_state(cluster):
    """QueueState rows as the scheduler writes them, so the overview shows bars."""
    pool = cluster["pool"]
    rows = [
        QueueState(
            pool=pool,
            department=cluster["dept"],
            deserved_gpus=12,
            fairshare_gpus=12,
            allocated_gpus=10,
            requested_gpus=14,
            running_count=2,
            pending_count=1,
        ),
        QueueState(
            pool=pool,
            project=cluster["vision"],
            deserved_gpus=8,
            fairshare_gpus=9,
            allocated_gpus=10,
            requested_gpus=12,
            running_count=2,
            pending_count=1,
        ),
        QueueState(
            pool=pool,
            project=cluster["nlp"],
            deserved_gpus=4,
            fairshare_gpus=3,
            allocated_gpus=0,
            requested_gpus=2,
        ),
        QueueState(pool=pool, department=cluster["other_dept"], deserved_gpus=4),
        QueueState(pool=pool, project=cluster["infra"], deserved_gpus=4, fairshare_gpus=4),
    ]
    return QueueState.objects.bulk_create(rows)
