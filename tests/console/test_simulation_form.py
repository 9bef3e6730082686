"""The new-run form of the Simulations page: changes chosen in rows, not typed as JSON."""

from __future__ import annotations

import pytest
from django.urls import reverse

from scheduler_core.models import Simulation

URL = "console:simulations"


def post(client, rows: list[dict], **fields):
    data = {
        "name": "try it",
        "source": "live",
        "horizon": 600,
        "changes-TOTAL_FORMS": str(len(rows)),
        "changes-INITIAL_FORMS": "0",
        **fields,
    }
    for i, row in enumerate(rows):
        data.update({f"changes-{i}-{k}": v for k, v in row.items()})
    return client.post(reverse(URL), data)


def row_html(html: str, index: int) -> str:
    """The HTML of change row `index` (0-based)."""
    return html.split("data-change-row>")[index + 1].split("</fieldset>")[0]


def test_rows_become_the_changes_the_run_tries(client_for, cluster):
    response = post(
        client_for("admin"),
        [
            {"kind": "quota", "owner": "project:nlp", "pool": "a100", "gpus": "6"},
            {"kind": "weight", "owner": "project:vision", "weight": "2", "rank": "1"},
            {"kind": "pool", "pool": "a100", "setting": "policy=fairshare"},
            {"kind": "pool", "pool": "a100", "setting": "min_guaranteed_runtime", "value": "600"},
            {"kind": "add_nodes", "name": "extra", "pool": "a100", "gpus": "8", "count": "2"},
            {"kind": "remove_node", "node": "gpu-2"},
            {"kind": ""},  # an empty row is no change
        ],
    )
    simulation = Simulation.objects.get()
    assert response.status_code == 302
    assert simulation.changes == {
        "quotas": [{"project": "nlp", "pool": "a100", "gpus": 6}],
        "weights": [{"project": "vision", "over_quota_weight": 2, "rank": 1}],
        "pools": [
            {"pool": "a100", "policy": "fairshare"},
            {"pool": "a100", "min_guaranteed_runtime": 600},
        ],
        "add_nodes": [{"name": "extra", "pool": "a100", "gpus": 8, "count": 2}],
        "remove_nodes": ["gpu-2"],
    }


def test_a_removed_row_is_left_out(client_for, cluster):
    post(
        client_for("admin"),
        [
            {"kind": "quota", "owner": "project:nlp", "pool": "a100", "gpus": "6"},
            {
                "kind": "quota",
                "owner": "project:vision",
                "pool": "a100",
                "gpus": "1",
                "DELETE": "on",
            },
        ],
    )
    assert Simulation.objects.get().changes == {
        "quotas": [{"project": "nlp", "pool": "a100", "gpus": 6}]
    }


@pytest.mark.parametrize(
    ("rows", "bad_row", "field", "message"),
    [
        (
            [{"kind": "quota", "owner": "project:nope", "pool": "a100", "gpus": "1"}],
            0,
            "owner",
            "Select a valid choice",
        ),
        (
            [{"kind": "quota", "owner": "project:nlp", "pool": "a100", "gpus": "-2"}],
            0,
            "gpus",
            "greater than or equal to 0",
        ),
        (
            [
                {"kind": "quota", "owner": "project:nlp", "pool": "a100", "gpus": "2"},
                {"kind": "quota", "owner": "project:nlp", "pool": "a100", "gpus": "3"},
            ],
            1,
            "owner",
            "this quota is changed in row 1 already",
        ),
        ([{"kind": "quota", "owner": "project:nlp", "pool": "a100"}], 0, "gpus", "give the"),
        ([{"gpus": "4"}], 0, "kind", "choose what this row changes"),
        (
            [{"kind": "add_nodes", "name": "gpu-1", "pool": "a100", "gpus": "8"}],
            0,
            "name",
            "already exists",  # the service's check, put back beside the row
        ),
        (
            [
                {
                    "kind": "quota",
                    "owner": "project:nlp",
                    "pool": "a100",
                    "gpus": "9",
                    "limit_gpus": "2",
                }
            ],
            0,
            "limit_gpus",
            "must be at least the deserved quota",
        ),
    ],
)
def test_bad_rows_are_shown_beside_the_row(client_for, cluster, rows, bad_row, field, message):
    response = post(client_for("admin"), rows)
    assert response.status_code == 200
    row = row_html(response.content.decode(), bad_row)
    assert message in row.split(f'data-field="{field}"', 1)[1].split('class="field', 1)[0]
    assert not Simulation.objects.exists()


def test_add_a_change_without_javascript_adds_a_row(client_for, cluster):
    response = post(
        client_for("admin"),
        [{"kind": "quota", "owner": "project:nlp", "pool": "a100", "gpus": "6"}],
        add_row="1",
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert html.count("data-change-row>") == 2 + 1  # two rows and the template's
    assert 'value="6"' in row_html(html, 0)
    assert not Simulation.objects.exists()


def test_department_admins_pick_only_their_projects_and_quota_or_weight(client_for, cluster):
    html = client_for("dept_admin").get(reverse(URL)).content.decode()
    row = row_html(html, 0)
    assert 'value="project:vision"' in row and 'value="project:nlp"' in row
    assert "project:infra" not in row  # another department's project
    assert "department:" not in row
    assert 'value="add_nodes"' not in row and 'value="remove_node"' not in row
    assert 'value="quota"' in row


def test_system_admins_pick_every_project_department_and_node(client_for, cluster):
    row = row_html(client_for("admin").get(reverse(URL)).content.decode(), 0)
    assert 'value="project:infra"' in row and 'value="department:ops"' in row
    assert 'value="gpu-1"' in row and 'value="remove_node"' in row


def test_rows_and_json_together_are_refused(client_for, cluster):
    response = post(
        client_for("admin"),
        [{"kind": "quota", "owner": "project:nlp", "pool": "a100", "gpus": "6"}],
        changes='{"quotas": [{"project": "vision", "pool": "a100", "gpus": 1}]}',
    )
    assert response.status_code == 200
    assert "in the rows or as JSON, not both" in response.content.decode()
    assert not Simulation.objects.exists()


def test_running_runs_in_the_list_are_live_regions(client_for, cluster):
    running = Simulation.objects.create(
        name="going", source="live", status="running", progress=0.4, created_by=cluster["admin"]
    )
    done = Simulation.objects.create(
        name="done", source="live", status="succeeded", progress=1, created_by=cluster["admin"]
    )
    client = client_for("admin")
    html = client.get(reverse(URL)).content.decode()
    assert f'data-live-groups="simulation-{running.pk}"' in html
    assert f'data-live-groups="simulation-{done.pk}"' not in html
    cell = client.get(reverse("console:simulation_status", args=[running.pk]) + "?row=1")
    assert 'aria-valuenow="40"' in cell.content.decode()
    assert "Running" in cell.content.decode()
