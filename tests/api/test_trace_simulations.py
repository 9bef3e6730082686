"""A job trace replayed through the API: created, refused field by field, no scenario."""

from __future__ import annotations

import pytest

from scheduler_core.whatif.tasks import run_simulation_task
from tests.factories import TRACE_CSV, TRACE_OPTIONS

pytestmark = pytest.mark.django_db


def test_the_api_replays_a_trace(admin_api):
    response = admin_api.post(
        "/api/v1/simulations/",
        {"name": "api day", "source": "trace", "trace_text": TRACE_CSV, "trace": TRACE_OPTIONS},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["source"] == "trace" and body["trace_options"]["nodes"] == 4
    assert body["status"] == "queued"
    run_simulation_task.apply(args=[body["id"]])  # what the worker does once it commits
    poll = admin_api.get(f"/api/v1/simulations/{body['id']}/").json()
    assert poll["status"] == "succeeded", poll["error"]
    assert poll["result"]["runs"]["fairway"]["completed"] == 6
    # the figures side by side, as replay_trace prints them: the engine first
    figures = poll["figures"]
    assert figures["schedulers"] == ["fairway", "fifo", "fifo+backfill"]
    rows = {row["figure"]: row["values"] for row in figures["rows"]}
    assert rows["jobs completed / unfinished"] == ["6 / 0"] * 3
    assert body["figures"] is None  # not before it has run
    scenario = admin_api.get(f"/api/v1/simulations/{body['id']}/scenario/")
    assert scenario.status_code == 409
    assert "a trace run replays a trace" in str(scenario.json())


def test_the_api_names_a_bad_option(admin_api):
    response = admin_api.post(
        "/api/v1/simulations/",
        {"name": "api day", "source": "trace", "trace_text": TRACE_CSV, "trace": {"hours": 2}},
        format="json",
    )
    assert response.status_code == 400
    assert "trace.start" in str(response.json())


def test_researchers_cannot_replay_a_trace(researcher_api):
    response = researcher_api.post(
        "/api/v1/simulations/",
        {"name": "mine", "source": "trace", "trace_text": TRACE_CSV, "trace": TRACE_OPTIONS},
        format="json",
    )
    assert response.status_code == 403
