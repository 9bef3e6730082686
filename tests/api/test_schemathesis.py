"""A bounded property-based run of the live schema against the app, in-process (WSGI),
signed in as a system admin with a token: no 5xx, no response that breaks the schema, bad
input refused with a documented status.

Each operation is run twice: with generated path parameters (mostly unknown ids and
names), and with path parameters naming real objects, so detail routes and actions are
exercised too. Schemathesis's pytest plugin is not used (it does not support this pytest
version); its engine is driven directly with Hypothesis.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from scheduler_core.choices import SimulationSource
from scheduler_core.models import Quota, Simulation
from scheduler_core.services.tokens import token_create
from tests import factories

MAX_EXAMPLES = 6
# A schema-valid body can still be refused for what it means (a user or name that does not
# exist, a gang that fits no pool): that is a correct 400, so this check does not apply.
EXCLUDED_CHECKS = [positive_data_acceptance]


@pytest.fixture(autouse=True)
def _quiet_request_log(caplog):
    caplog.set_level("ERROR", logger="django.request")


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    """Requests go straight to the WSGI handler, which closes the database connection
    when a request ends (and so the test's transaction on PostgreSQL); Django's own test
    client avoids that the same way."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def real_objects(cluster) -> dict[str, dict[str, object]]:
    """Path parameters that name existing objects, by the collection in the path."""
    workload = factories.running_workload(cluster["vision"], [cluster["nodes"][0]], gpus=1)
    spare_token, _ = token_create(user=cluster["admin"], name="spare")
    simulation = Simulation.objects.create(
        name="run", source=SimulationSource.SCENARIO, created_by=cluster["admin"]
    )
    return {
        "departments": {"name": "research", "username": "dept-admin"},
        "projects": {"name": "vision", "username": "victor"},
        "pools": {"name": "a100"},
        "nodes": {"name": "gpu-2"},
        "queues": {"name": "a100"},
        "quotas": {"id": Quota.objects.get(project=cluster["vision"]).pk},
        "workloads": {"id": workload.pk},
        "simulations": {"id": simulation.pk},
        "tokens": {"id": spare_token.pk},
    }


def _collection(path: str) -> str:
    return path.removeprefix("/api/v1/").split("/")[0]


def test_api_conforms_to_its_schema(cluster, real_objects):
    _, raw = token_create(user=cluster["admin"], name="schemathesis")
    # the WSGI transport hands over the bytes as sent: ask for them uncompressed (gzip is
    # tested in tests/console/test_static_files.py)
    headers = {"Authorization": f"Bearer {raw}", "Accept-Encoding": "identity"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 40
    for operation in operations:
        known = real_objects.get(_collection(operation.path), {})
        names = {p.name for p in operation.path_parameters}
        variants = [({}, GenerationMode.POSITIVE), ({}, GenerationMode.NEGATIVE)]
        if names:
            variants.append(
                ({k: v for k, v in known.items() if k in names}, GenerationMode.POSITIVE)
            )
        for path_parameters, mode in variants:
            strategy = operation.as_strategy(mode, path_parameters=path_parameters or None)

            @given(case=strategy)
            @settings(
                max_examples=MAX_EXAMPLES,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                database=None,
                derandomize=True,
            )
            def run(case) -> None:
                case.call_and_validate(headers=headers, excluded_checks=EXCLUDED_CHECKS)

            try:
                run()
            except (Exception, BaseExceptionGroup) as exc:  # report every operation at the end
                failures.append(f"{operation.method.upper()} {operation.path} [{mode}]: {exc}")
    assert not failures, "\n\n".join(failures)
