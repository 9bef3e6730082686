"""The OpenAPI schema is complete, and the docs are served without any CDN."""

from __future__ import annotations

import re

import pytest
from rest_framework.test import APIClient

ERRORS_ON_EVERY_OPERATION = {"401", "403"}


@pytest.fixture
def schema(db) -> dict:
    response = APIClient().get("/api/schema/?format=json")
    assert response.status_code == 200
    return response.json()


def _operations(schema):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            yield path, method, operation


def test_schema_is_public_and_valid_openapi_3(schema):
    from drf_spectacular.validation import validate_schema

    assert schema["openapi"].startswith("3.")
    validate_schema(schema)


def test_every_field_is_typed_and_described(schema):
    problems = []
    for name, component in schema["components"]["schemas"].items():
        for field, prop in component.get("properties", {}).items():
            if not prop.get("description"):
                problems.append(f"{name}.{field}: no description")
            if not any(k in prop for k in ("type", "$ref", "allOf", "oneOf", "anyOf")):
                problems.append(f"{name}.{field}: no type")
    for path, method, operation in _operations(schema):
        for parameter in operation.get("parameters", []):
            if not parameter.get("description"):
                problems.append(f"{method} {path} {parameter['name']}: no description")
        if not operation.get("summary") and not operation.get("description"):
            problems.append(f"{method} {path}: no summary")
    assert not problems, problems


def test_every_operation_documents_its_errors(schema):
    missing = []
    for path, method, operation in _operations(schema):
        codes = set(operation["responses"])
        expected = set(ERRORS_ON_EVERY_OPERATION)
        if "{" in path:
            expected.add("404")
        if method in {"post", "patch", "delete"}:
            expected |= {"400", "409"}
        if path.endswith(("/workloads/", "/workloads/bulk/")) and method == "post":
            expected.add("429")
        if not expected <= codes:
            missing.append(f"{method.upper()} {path}: {sorted(expected - codes)}")
        for code, response in operation["responses"].items():
            if code.startswith(("4", "5")):
                ref = response["content"]["application/json"]["schema"]["$ref"]
                assert ref.endswith("/Error"), (path, method, code)
    assert not missing, missing


def test_request_bodies_reject_unknown_fields(schema):
    for name, component in schema["components"]["schemas"].items():
        if name.endswith("Request"):
            assert component.get("additionalProperties") is False, name


def test_token_auth_is_documented(schema):
    scheme = schema["components"]["securitySchemes"]["tokenAuth"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer"


def test_submissions_document_the_idempotency_key(schema):
    for path in ("/api/v1/workloads/", "/api/v1/workloads/bulk/"):
        names = {p["name"] for p in schema["paths"][path]["post"]["parameters"]}
        assert "Idempotency-Key" in names


@pytest.mark.parametrize("path", ["/api/docs/", "/api/redoc/"])
def test_docs_pages_use_local_assets_only(db, path):
    response = APIClient().get(path)
    assert response.status_code == 200
    html = response.content.decode()
    external = re.findall(r'(?:src|href)="(https?://[^"]+)"', html)
    assert not external, external
    assert "/static/drf_spectacular_sidecar/" in html


def test_schema_generates_without_warnings(db, tmp_path):
    from django.core.management import call_command

    call_command(
        "spectacular", "--fail-on-warn", "--validate", "--file", str(tmp_path / "schema.yaml")
    )
