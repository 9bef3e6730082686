"""Fixtures of the what-if tests: a busy copy-able cluster, fast passwords, and a channel
layer of their own (whatever CHANNEL_LAYERS is active)."""

from __future__ import annotations

import copy
import uuid

import pytest

from tests import factories


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """The `cluster` fixture creates six users; real password hashing costs seconds."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def isolated_channel_layer(settings):
    """A fresh layer per test; on Redis, a key prefix of its own (the Redis may be shared)."""
    layers = copy.deepcopy(settings.CHANNEL_LAYERS)
    layer = layers["default"]
    if "redis" in layer["BACKEND"].lower():
        layer.setdefault("CONFIG", {})["prefix"] = f"fairway-test-{uuid.uuid4().hex[:10]}"
    settings.CHANNEL_LAYERS = layers


@pytest.fixture
def busy_cluster(cluster):
    """vision runs 7 two-GPU jobs (14 of 16 GPUs, 6 over its quota of 8); nlp (quota 4)
    waits with 4 two-GPU jobs. The scheduler gives nlp 6 by reclaiming from vision."""
    gpu1, gpu2 = cluster["nodes"]
    for i in range(7):
        factories.running_workload(
            cluster["vision"], [gpu1 if i < 4 else gpu2], name=f"train-{i}", gpus=2
        )
    for i in range(4):
        factories.workload(cluster["nlp"], f"tune-{i}", gpus=2)
    return cluster
