"""What-if runs from the console: start, watch, read, compare."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from scheduler_core.choices import SimulationStatus
from scheduler_core.models import Simulation
from tests.factories import TINY_SCENARIO


def run(projects: dict[str, float]) -> dict:
    return {
        "projects": {
            name: {
                "mean_gpus": gpus,
                "final_gpus": gpus,
                "mean_pending_seconds": 30.0,
                "preemptions": 1,
            }
            for name, gpus in projects.items()
        },
        "cluster": {
            "capacity_gpus": 16,
            "mean_utilization": 0.5,
            "preemptions": 2,
            "pending_at_end": 1,
        },
        "timeline": {"at": [0, 600, 1200], "projects": {n: [0, g, g] for n, g in projects.items()}},
    }


@pytest.fixture
def finished(cluster):
    def make(name, owner, baseline, changed=None):
        result = {
            "horizon": 3600,
            "changes_text": "vision quota 8 -> 2",
            "runs": {"baseline": run(baseline)},
        }
        if changed:
            result["runs"]["changed"] = run(changed)
            result["comparison"] = {
                "summary": "Gains: nlp; Reclaimed: vision.",
                "gains": [{"project": "nlp", "text": "nlp gains 4.0 GPUs on average"}],
                "reclaimed": [{"project": "vision", "text": "vision gets 4.0 GPUs reclaimed"}],
                "projects": {},
            }
        return Simulation.objects.create(
            name=name,
            source="live",
            status=SimulationStatus.SUCCEEDED,
            progress=1,
            result=result,
            created_by=cluster[owner],
        )

    return make


def test_admin_starts_a_live_run_with_changes(client_for, cluster):
    changes = {"quotas": [{"project": "vision", "pool": "a100", "gpus": 2}]}
    response = client_for("admin").post(
        reverse("console:simulations"),
        {
            "name": "vision smaller",
            "source": "live",
            "changes": json.dumps(changes),
            "horizon": 600,
        },
    )
    simulation = Simulation.objects.get()
    assert response["Location"] == reverse("console:simulation_detail", args=[simulation.pk])
    assert simulation.changes["quotas"][0]["gpus"] == 2


def test_admin_uploads_a_scenario(client_for, cluster):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("tiny.yaml", TINY_SCENARIO.encode(), content_type="text/yaml")
    client_for("admin").post(
        reverse("console:simulations"),
        {"name": "tiny", "source": "scenario", "scenario_file": upload, "horizon": 600},
    )
    assert Simulation.objects.get().source == "scenario"


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        ({"changes": "{oops"}, "changes", "not valid JSON"),
        (
            {"changes": json.dumps({"quotas": [{"project": "nope", "pool": "a100", "gpus": 1}]})},
            "changes",
            "quotas[0].project: no project named",
        ),
        ({"source": "scenario"}, "scenario_text", "upload a scenario file or paste one"),
        ({"source": "scenario", "scenario_text": "name: [unclosed"}, "scenario_text", ""),
    ],
)
def test_errors_are_shown_next_to_fields(client_for, cluster, data, field, message):
    payload = {"name": "x", "source": "live", "horizon": 600, **data}
    response = client_for("admin").post(reverse("console:simulations"), payload)
    assert response.status_code == 200
    html = response.content.decode()
    assert "has-error" in html.split(f'data-field="{field}"', 1)[0][-60:] or message in html
    assert message in html
    assert not Simulation.objects.exists()


def test_detail_shows_progress_outcome_and_runs(client_for, finished):
    simulation = finished(
        "vision smaller", "admin", {"vision": 8, "nlp": 0}, {"vision": 4, "nlp": 4}
    )
    html = (
        client_for("admin")
        .get(reverse("console:simulation_detail", args=[simulation.pk]))
        .content.decode()
    )
    assert "nlp gains 4.0 GPUs on average" in html
    assert "vision gets 4.0 GPUs reclaimed" in html
    assert 'data-run="baseline"' in html and 'data-run="changed"' in html
    assert f'data-live-groups="simulation-{simulation.pk}"' in html
    status = (
        client_for("admin")
        .get(reverse("console:simulation_status", args=[simulation.pk]) + "?compact=1")
        .content.decode()
    )
    assert "data-whatif-outcome" in status


def test_runs_of_others_are_hidden_from_department_admins(client_for, finished):
    simulation = finished("mine", "admin", {"vision": 8})
    url = reverse("console:simulation_detail", args=[simulation.pk])
    assert client_for("dept_admin").get(url).status_code == 404
    assert (
        "mine" not in client_for("dept_admin").get(reverse("console:simulations")).content.decode()
    )


def test_compare_two_runs_side_by_side(client_for, finished):
    a = finished("vision 8", "admin", {"vision": 8, "nlp": 2})
    b = finished("vision 2", "admin", {"vision": 2, "nlp": 6})
    html = (
        client_for("admin")
        .get(reverse("console:simulation_compare") + f"?id={a.pk}&id={b.pk}")
        .content.decode()
    )
    assert "vision 8" in html and "vision 2" in html
    assert "+4.0" in html and "-6.0" in html
    # in words who moves, and both charts have legends
    assert (
        "In vision 2, compared with vision 8, vision&#x27;s mean GPUs fall from 8.0 to 2.0; "
        "nlp&#x27;s rise from 2.0 to 6.0." in html
    )
    assert html.count("data-chart-legend") == 2


def test_compare_needs_two(client_for, finished):
    a = finished("only", "admin", {"vision": 8})
    response = client_for("admin").get(reverse("console:simulation_compare") + f"?id={a.pk}")
    assert response.status_code == 302


@pytest.mark.parametrize("role", ["researcher", "viewer"])
def test_researchers_cannot_run_simulations(client_for, cluster, role):
    response = client_for(role).post(
        reverse("console:simulations"), {"name": "x", "source": "live", "horizon": 600}
    )
    assert response.status_code == 403
    assert not Simulation.objects.exists()
