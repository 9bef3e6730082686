"""OpenAPI generation: every operation documents its error responses, token auth is
described, and request bodies reject unknown fields (as the API does)."""

from __future__ import annotations

from drf_spectacular.authentication import BasicScheme
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse

from api.serializers.errors import ErrorSerializer

ERROR_DESCRIPTIONS = {
    400: "Bad input: `fields` names each offending field and says why.",
    401: "No credentials, or an invalid or revoked token.",
    403: "Signed in, but your role does not allow this.",
    404: "No such resource, or you cannot see it.",
    409: "Conflicts with the current state: already cancelled, a name that exists, still in "
    "use, a reused Idempotency-Key, a concurrent change.",
    415: "The body must be JSON (Content-Type: application/json).",
    429: "Too many submissions for this token: wait `retry_after` seconds.",
}
SUCCESS_DESCRIPTIONS = {
    "200": "Success.",
    "201": "Created.",
    "204": "Done (no body).",
}
PATH_DESCRIPTIONS = {
    "name": "The {noun}'s unique name.",
    "id": "The {noun}'s id.",
    "username": "The member's username.",
}
WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}


class FairwayAutoSchema(AutoSchema):
    """AutoSchema that adds the documented error responses to every operation."""

    def _error_codes(self) -> list[int]:
        codes = [401, 403]
        has_query = bool(self._get_filter_parameters() or self._get_paginator())
        if (
            self.method in WRITE_METHODS
            or has_query
            or getattr(self.view, "validates_query", False)
        ):
            codes.append(400)
        if "{" in self.path:
            codes.append(404)
        if self.method in WRITE_METHODS:
            codes += [409]
        if self.method in {"POST", "PUT", "PATCH"} and self.get_request_serializer() is not None:
            codes.append(415)
        if any(
            getattr(t, "scope", None) == "submissions"
            for t in getattr(self.view, "get_throttles", lambda: [])()
        ):
            codes.append(429)
        return sorted(codes)

    def _resolve_path_parameters(self, variables):
        parameters = super()._resolve_path_parameters(variables)
        noun = getattr(self.view, "noun", "resource")
        for parameter in parameters:
            if not parameter.get("description"):
                parameter["description"] = PATH_DESCRIPTIONS.get(
                    parameter["name"], "Identifies the {noun}."
                ).format(noun=noun)
        return parameters

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        for code, response in responses.items():
            if not response.get("description"):
                response["description"] = SUCCESS_DESCRIPTIONS.get(code, "Success.")
        for code in self._error_codes():
            responses.setdefault(
                str(code),
                self._get_response_for_code(
                    OpenApiResponse(ErrorSerializer, description=ERROR_DESCRIPTIONS[code]),
                    str(code),
                    direction=direction,
                ),
            )
        return responses


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """Documents `Authorization: Bearer fw_...`."""

    target_class = "api.authentication.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "fw_...",
            "description": (
                "A personal API token (create one at POST /api/v1/tokens/). "
                "`Authorization: Token fw_...` is accepted too."
            ),
        }


class SignInBasicScheme(BasicScheme):
    """Documents HTTP Basic on POST /api/v1/tokens/ (failed attempts limited)."""

    target_class = "api.authentication.SignInBasicAuthentication"


def forbid_unknown_request_fields(result, generator, request, public):
    """Post-processing hook: request bodies are closed objects (unknown fields are a 400)."""
    for name, schema in result.get("components", {}).get("schemas", {}).items():
        is_request_object = name.endswith("Request") and schema.get("type") == "object"
        if is_request_object and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
    return result
