"""Bad input gets one JSON error shape naming the field and saying why; never a 500."""

from __future__ import annotations

import pytest

from scheduler_core.models import Quota, Workload

WORKLOADS = "/api/v1/workloads/"


def assert_error(response, status: int, code: str, field: str | None = None) -> dict:
    assert response.status_code == status, response.content[:500]
    body = response.json()
    assert body["error"] == code, body
    assert isinstance(body["detail"], str) and body["detail"]
    if field is not None:
        assert field in body["fields"], body
        assert all(isinstance(m, str) and m for m in body["fields"][field])
    return body


def test_limit_under_deserved_names_the_limit(admin_api):
    response = admin_api.post(
        "/api/v1/quotas/",
        {"pool": "a100", "project": "vision", "gpus": 4, "limit_gpus": 2},
        format="json",
    )
    body = assert_error(response, 400, "validation_failed", "limit_gpus")
    assert body["fields"]["limit_gpus"] == ["the limit (2) must be at least the deserved quota (4)"]
    assert body["detail"] == "limit_gpus: the limit (2) must be at least the deserved quota (4)"


def test_quota_below_zero_is_refused_and_nothing_changes(admin_api, cluster):
    quota = Quota.objects.get(project=cluster["vision"])
    response = admin_api.patch(f"/api/v1/quotas/{quota.pk}/", {"gpus": -1}, format="json")
    assert_error(response, 400, "validation_failed", "gpus")
    quota.refresh_from_db()
    assert quota.gpus == 8


def test_gang_bigger_than_any_pool(admin_api):
    response = admin_api.post(
        WORKLOADS, {"project": "vision", "name": "huge", "pods": 3, "gpus": 8}, format="json"
    )
    body = assert_error(response, 400, "validation_failed", "min_pods")
    assert "24 GPUs" in body["fields"]["min_pods"][0]
    assert not Workload.objects.filter(name="huge").exists()


def test_pod_bigger_than_any_node(admin_api):
    response = admin_api.post(
        WORKLOADS, {"project": "vision", "name": "fat", "gpus": 9}, format="json"
    )
    assert_error(response, 400, "validation_failed", "gpus")


def test_unknown_pool_is_named(admin_api):
    response = admin_api.post(
        WORKLOADS,
        {"project": "vision", "name": "w", "pools": ["a100", "nope"], "gpus": 1},
        format="json",
    )
    body = assert_error(response, 400, "validation_failed", "pools[1]")
    assert body["fields"]["pools[1]"] == ["no pool named 'nope'"]


def test_unknown_project_is_400_and_another_teams_project_is_403(researcher_api):
    assert_error(
        researcher_api.post(WORKLOADS, {"project": "nope", "name": "w", "gpus": 1}, format="json"),
        400,
        "validation_failed",
        "project",
    )
    response = researcher_api.post(
        WORKLOADS, {"project": "infra", "name": "w", "gpus": 1}, format="json"
    )
    body = assert_error(response, 403, "permission_denied")
    assert "infra" in body["detail"]
    assert not Workload.objects.exists()


def test_malformed_scenario_names_scenario_text(admin_api):
    response = admin_api.post(
        "/api/v1/simulations/",
        {"name": "bad", "source": "scenario", "scenario_text": "pools: [unclosed"},
        format="json",
    )
    body = assert_error(response, 400, "validation_failed", "scenario_text")
    assert "line" in body["fields"]["scenario_text"][0]


def test_bad_json_is_a_malformed_request(admin_api):
    response = admin_api.post(WORKLOADS, "{not json", content_type="application/json")
    assert_error(response, 400, "malformed_request")


@pytest.mark.parametrize("depth", [33, 960, 100_000])
@pytest.mark.parametrize(
    "path", [WORKLOADS, f"{WORKLOADS}bulk/", "/api/v1/simulations/", "/api/v1/tokens/"]
)
def test_deeply_nested_json_is_a_malformed_request(admin_api, path, depth):
    body = '{"name": "deep", "spec": ' + "[" * depth + "]" * depth + "}"
    response = admin_api.post(path, body, content_type="application/json")
    body = assert_error(response, 400, "malformed_request")
    assert "nested more than 32 levels" in body["detail"]
    assert not Workload.objects.exists()


@pytest.mark.parametrize(
    "text",
    [
        "pools: " + "[" * 10_000 + "]" * 10_000,
        '{"pools": ' + "[" * 10_000 + "]" * 10_000 + "}",
        "pools:\n" + "".join(f"{'  ' * i}- a:\n" for i in range(40)),
        "a: &a [*a]\npools: *a",
    ],
    ids=["yaml-flow", "json", "yaml-block", "yaml-alias-to-itself"],
)
def test_a_deeply_nested_scenario_is_400_naming_scenario_text(admin_api, text):
    response = admin_api.post(
        "/api/v1/simulations/",
        {"name": "deep", "source": "scenario", "scenario_text": text},
        format="json",
    )
    body = assert_error(response, 400, "validation_failed", "scenario_text")
    assert "nested more than 32 levels" in body["fields"]["scenario_text"][0]


def test_a_list_where_an_object_belongs(admin_api):
    response = admin_api.post(WORKLOADS, [1, 2], format="json")
    assert_error(response, 400, "validation_failed", "non_field_errors")


def test_form_bodies_are_refused(admin_api):
    response = admin_api.post(WORKLOADS, {"project": "vision", "name": "w", "gpus": 1})  # multipart
    assert_error(response, 415, "unsupported_media_type")


def test_unknown_fields_are_reported_with_the_other_problems(admin_api):
    response = admin_api.post(
        WORKLOADS, {"project": "vision", "name": "w", "gpu": 1, "pods": 0, "gpus": 1}, format="json"
    )
    body = assert_error(response, 400, "validation_failed", "gpu")
    assert "unknown field" in body["fields"]["gpu"][0]
    assert "pods" in body["fields"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("gpus", "1"),
        ("gpus", True),
        ("gpus", 10**30),
        ("pods", 1.5),
        ("pods", "2"),
        ("pods", 10**20),
        ("priority", 10**40),
        ("preemptible", "yes"),
        ("name", 12),
        ("name", "Not A Slug"),
        ("name", "x" * 500),
        ("kind", "gaming"),
        ("node_selector", ["a"]),
        ("node_selector", {"zone": 1}),
        ("groups", {"name": "g"}),
        ("groups", [{"name": "g", "pods": 1, "bogus": 1}]),
        ("spec", {"duration": "long"}),
        ("spec", {"whatever": 1}),
        ("pools", "a100"),
        ("backoff_limit", -1),
        ("weight", -2),
    ],
)
def test_wrong_types_and_huge_numbers_are_400(admin_api, field, value):
    body = {"project": "vision", "name": "w", field: value}
    response = admin_api.post(WORKLOADS, body, format="json")
    assert response.status_code == 400, response.content
    fields = response.json()["fields"]
    assert any(
        k == field or k.startswith(f"{field}.") or k.startswith(f"{field}[") for k in fields
    ), fields


@pytest.mark.parametrize("number", ["1e400", "-1e400", "NaN", "Infinity"])
def test_non_finite_numbers_are_400(admin_api, number):
    raw = f'{{"project": "vision", "name": "w", "gpus": {number}}}'
    response = admin_api.post(WORKLOADS, raw, content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["error"] in {"validation_failed", "malformed_request"}


def test_flat_shape_and_groups_together_are_refused(admin_api):
    response = admin_api.post(
        WORKLOADS,
        {"project": "vision", "name": "w", "gpus": 1, "groups": [{"name": "g", "gpus": 1}]},
        format="json",
    )
    assert_error(response, 400, "validation_failed", "gpus")


def test_the_same_pool_twice(admin_api):
    response = admin_api.post(
        WORKLOADS,
        {"project": "vision", "name": "w", "pools": ["a100", "a100"], "gpus": 1},
        format="json",
    )
    assert_error(response, 400, "validation_failed", "pools[1]")


def test_min_pods_above_pods_from_the_service(admin_api):
    response = admin_api.post(
        WORKLOADS,
        {"project": "vision", "name": "w", "pods": 2, "min_pods": 3, "gpus": 1},
        format="json",
    )
    assert_error(response, 400, "validation_failed", "min_pods")


def test_duplicate_workload_name(admin_api):
    body = {"project": "vision", "name": "same", "gpus": 1}
    assert admin_api.post(WORKLOADS, body, format="json").status_code == 201
    assert_error(admin_api.post(WORKLOADS, body, format="json"), 409, "conflict", "name")


@pytest.mark.parametrize(
    "query",
    [
        "limit=abc",
        "limit=0",
        "limit=100000",
        "offset=-1",
        "offset=1e400",
        "project_id=abc",
        "project_id=99999999999999999999",
        "status=sleeping",
        "submitted_after=yesterday",
        "kind=gaming",
    ],
)
def test_bad_query_parameters_are_400(admin_api, query):
    assert_error(admin_api.get(f"{WORKLOADS}?{query}"), 400, "validation_failed")


@pytest.mark.parametrize(
    "query", ["cursor=garbage", "limit=-5", "type=nonsense", "since=nope", "workload=0"]
)
def test_bad_event_query_parameters_are_400(admin_api, query):
    assert_error(admin_api.get(f"/api/v1/events/?{query}"), 400, "validation_failed")


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/workloads/99999999999999999999999/",
        "/api/v1/workloads/abc/",
        "/api/v1/projects/nope/",
        "/api/v1/nowhere/",
        "/api/v2/workloads/",
        "/api/v1/work%0Aloads/",
        "/api/v1/workloads/%0A",
        "/api/%0A",
    ],
)
def test_unknown_resources_and_routes_are_json_404(admin_api, path):
    assert_error(admin_api.get(path), 404, "not_found")


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        ("/api/v1/events/?until=", "until"),
        ("/api/v1/workloads/?project=", "project"),
        ("/api/v1/nodes/?state=", "state"),
        ("/api/v1/quotas/?pool=", "pool"),
    ],
)
def test_a_parameter_sent_empty_is_400_naming_it(admin_api, path, parameter):
    body = assert_error(admin_api.get(path), 400, "validation_failed", parameter)
    assert "must not be empty" in body["fields"][parameter][0]


def test_method_not_allowed_has_the_shape(admin_api):
    assert_error(
        admin_api.put("/api/v1/projects/vision/", {}, format="json"), 405, "method_not_allowed"
    )


def test_state_errors_name_the_status(admin_api, cluster):
    created = admin_api.post(
        WORKLOADS, {"project": "vision", "name": "w", "gpus": 1}, format="json"
    )
    wid = created.json()["id"]
    assert admin_api.post(f"{WORKLOADS}{wid}/cancel/").status_code == 200
    body = assert_error(admin_api.post(f"{WORKLOADS}{wid}/cancel/"), 409, "conflict", "status")
    assert "already cancelled" in body["fields"]["status"][0]
    assert body["detail"] == "status: workload is already cancelled"


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/departments/", {"name": "research"}, "name"),
        ("/api/v1/projects/", {"department": "research", "name": "vision"}, "name"),
        ("/api/v1/pools/", {"name": "a100"}, "name"),
        ("/api/v1/nodes/", {"pool": "a100", "name": "gpu-1", "gpu_count": 8}, "name"),
        (f"{WORKLOADS}bulk/", {"workloads": [{"project": "vision", "name": "w", "gpus": 1}]}, None),
    ],
)
def test_names_that_exist_are_409_naming_the_field(admin_api, path, body, field):
    assert admin_api.post(WORKLOADS, {"project": "vision", "name": "w", "gpus": 1}, format="json")
    body = assert_error(admin_api.post(path, body, format="json"), 409, "conflict", field)
    assert "already exists" in body["detail"]


def test_bad_input_is_400_even_with_a_name_that_exists(admin_api):
    """Bad input is answered first (it names every problem, the clash too)."""
    assert admin_api.post(WORKLOADS, {"project": "vision", "name": "w", "gpus": 1}, format="json")
    response = admin_api.post(
        f"{WORKLOADS}bulk/",
        {
            "workloads": [
                {"project": "vision", "name": "w", "gpus": 1},
                {"project": "vision", "name": "w", "gpus": 1},
            ]
        },
        format="json",
    )
    body = assert_error(response, 400, "validation_failed", "workloads[1].name")
    assert "already exists" in body["fields"]["workloads[0].name"][0]


@pytest.mark.parametrize(
    ("first", "again", "message"),
    [
        ("suspend", "suspend", "only pending or running workloads can be suspended"),
        ("cancel", "resume", "only suspended workloads can be resumed"),
        ("cancel", "priority", "workload is already cancelled"),
    ],
)
def test_actions_in_the_wrong_state_are_409(admin_api, first, again, message):
    wid = admin_api.post(
        WORKLOADS, {"project": "vision", "name": "w", "gpus": 1}, format="json"
    ).json()["id"]
    assert admin_api.post(f"{WORKLOADS}{wid}/{first}/").status_code == 200
    body = {"priority": 10} if again == "priority" else None
    response = admin_api.post(f"{WORKLOADS}{wid}/{again}/", body, format="json")
    assert message in assert_error(response, 409, "conflict", "status")["detail"]


def test_in_use_deletions_are_409_saying_what_to_do(admin_api):
    body = assert_error(admin_api.delete("/api/v1/pools/a100/"), 409, "conflict")
    assert "delete them first" in body["detail"]
    body = assert_error(admin_api.delete("/api/v1/departments/research/"), 409, "conflict")
    assert "nlp" in body["detail"] and "vision" in body["detail"]


def test_nested_bulk_errors_name_the_workload(admin_api):
    response = admin_api.post(
        f"{WORKLOADS}bulk/",
        {
            "workloads": [
                {"project": "vision", "name": "ok", "gpus": 1},
                {"project": "vision", "name": "bad", "groups": [{"name": "g", "pods": 0}]},
            ]
        },
        format="json",
    )
    assert_error(response, 400, "validation_failed", "workloads[1].groups[0].pods")


def test_control_characters_never_reach_the_database(admin_api):
    """PostgreSQL refuses NUL in text: these must be 400/404, not 500."""
    body = {"project": "vis\x00ion", "name": "w", "spec": {"env": {"A\x00": "1"}}}
    response = admin_api.post(WORKLOADS, body, format="json")
    assert response.status_code == 400
    assert {"project", "spec.env"} <= set(response.json()["fields"])
    assert admin_api.get(f"{WORKLOADS}?project=a%00b").status_code == 400
    assert admin_api.get("/api/v1/projects/a%00b/").status_code == 404
    response = admin_api.post(
        WORKLOADS,
        {"project": "vision", "name": "w", "gpus": 1},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k\x01",
    )
    assert response.status_code == 400


@pytest.mark.parametrize("when", ["7235-06-05T11:39:14+18:22", "0001-01-01T00:00:00-06:00"])
def test_odd_time_zone_offsets_are_fine_or_400(admin_api, when):
    from urllib.parse import quote

    response = admin_api.get(f"/api/v1/events/?since={quote(when)}")
    assert response.status_code in (200, 400)
