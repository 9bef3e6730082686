"""Fixtures of the live-scheduler tests: isolated cache keys and locks, and helpers."""

from __future__ import annotations

import uuid

import pytest

from scheduler_core.services.workloads import WorkloadRequest, workload_submit


@pytest.fixture(autouse=True)
def _isolated_scheduler_keys(settings):
    """Each test gets its own cycle lock and trigger keys (the Redis may be shared)."""
    settings.SCHEDULER_KEY_PREFIX = f"fairway-test-{uuid.uuid4().hex[:12]}"
    settings.SCHEDULER_CYCLE_PAUSES = {}
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast users


@pytest.fixture
def submit(cluster):
    """submit(project_key, name, gpus=1, user=..., **fields) -> Workload, via the service."""

    def _submit(project: str, name: str, gpus: float = 1, user=None, **fields):
        user = user or (cluster["nlp_researcher"] if project == "nlp" else cluster["admin"])
        request = WorkloadRequest(project=cluster[project], name=name, gpus=gpus, **fields)
        return workload_submit(user=user, request=request)

    return _submit
