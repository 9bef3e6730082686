"""The error body, for the schema (the exception handler builds it)."""

from __future__ import annotations

from rest_framework import serializers


class ErrorSerializer(serializers.Serializer):
    """What every failed request returns."""

    error = serializers.CharField(
        help_text=(
            "Stable machine-readable code: validation_failed, malformed_request, "
            "not_authenticated, authentication_failed, permission_denied, not_found, "
            "conflict, throttled, unsupported_media_type, method_not_allowed, server_error."
        )
    )
    detail = serializers.CharField(help_text="One sentence for a person: what went wrong.")
    # DRF takes declared fields off the class: no clash with the attribute of this name
    fields = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text=(
            "Only for validation_failed: each offending field (nested ones like "
            "`groups[1].pods` or `workloads[3].name`) with its problems."
        ),
    )
    retry_after = serializers.IntegerField(
        required=False, help_text="Only for throttled: seconds to wait before retrying."
    )
