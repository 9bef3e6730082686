"""Scheduling survives a Redis outage and resumes by itself: the whole product (`manage.py
run`: web, worker, beat) on this run's PostgreSQL test database and a Redis of its own,
which is stopped while a cycle task runs and started again later."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.db import connection

from scheduler_core.choices import WorkloadStatus
from scheduler_core.models import Workload
from scheduler_core.services.tokens import token_create
from tests.loop.workers import wait_for, worker_database_url
from tests.product.processes import Product, free_port, services

pytestmark = [pytest.mark.services, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (run with DATABASE_URL)")


def _status(name: str) -> str | None:
    workload = Workload.objects.filter(name=name).first()
    return workload and workload.status


def test_a_redis_outage_neither_kills_the_worker_nor_loses_a_write(cluster, settings, tmp_path):
    run_dir = tmp_path / "services"
    redis_url = services("start", "redis", run_dir=run_dir, redis=free_port())["REDIS_URL"]
    product = Product(
        "--web-concurrency", "1",
        env={
            "DATABASE_URL": worker_database_url(),
            "REDIS_URL": redis_url,
            "SCHEDULER_KEY_PREFIX": django_settings.SCHEDULER_KEY_PREFIX,
            "SCHEDULER_BEAT_INTERVAL": "1",
            "DJANGO_SETTINGS_MODULE": "config.settings_test",  # reads SCHEDULER_CYCLE_PAUSES
            "SCHEDULER_CYCLE_PAUSES": "before_apply=3",  # a cycle task is running when Redis stops
            "WORKER_CONCURRENCY": "1",
        },
        var_dir=tmp_path,
    )  # fmt: skip
    try:
        product.wait_serving()
        _, token = token_create(user=cluster["researcher"], name="outage")

        def submit(name: str) -> int:
            body = {"project": "vision", "name": name, "gpus": 1}
            return product.request("POST", "/api/v1/workloads/", token=token, body=body)[0]

        assert submit("before") == 201
        wait_for(lambda: "cycle paused before_apply" in product.output, timeout=60)
        services("stop", "redis", run_dir=run_dir)

        # (a) a write during the outage is saved and answers its normal success
        assert submit("during") == 201
        status, _, listed = product.request("GET", "/api/v1/workloads/", token=token)
        assert status == 200 and {w["name"] for w in listed["results"]} == {"before", "during"}
        wait_for(lambda: "Redis" in product.output and "unreachable" in product.output)

        assert services("start", "redis", run_dir=run_dir)["REDIS_URL"] == redis_url
        # the beat's next cycles run both, with the worker that was there all along
        wait_for(
            lambda: _status("before") == _status("during") == WorkloadStatus.RUNNING,
            timeout=90,
            message="no cycle ran after Redis came back:\n" + product.output[-4000:],
        )
        assert "worker exited" not in product.output, product.output[-4000:]
    finally:
        product.stop()
        services("stop", "redis", run_dir=run_dir)
