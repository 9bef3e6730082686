"""Personal API tokens."""

from __future__ import annotations

from rest_framework import serializers

from api.fields import StrictCharField
from api.serializers.base import StrictInputSerializer


class TokenSerializer(serializers.Serializer):
    """A token (never its key, which is shown only once at creation)."""

    id = serializers.IntegerField(help_text="Token id; used to revoke it.")
    name = serializers.CharField(help_text="Your name for it.")
    prefix = serializers.CharField(help_text="First characters of the key, to recognise it.")
    created_at = serializers.DateTimeField(help_text="When it was created.")
    last_used_at = serializers.DateTimeField(
        allow_null=True, help_text="When it was last used (to the minute)."
    )


class TokenCreatedSerializer(TokenSerializer):
    """A new token with its key: store the key now, it is never shown again."""

    key = serializers.CharField(
        help_text="The secret: send it as `Authorization: Bearer <key>`. Shown only once."
    )


class TokenCreateSerializer(StrictInputSerializer):
    """A new token."""

    name = StrictCharField(max_length=100, help_text="A name to recognise it by.")


class MeSerializer(serializers.Serializer):
    """Who you are and what you may do."""

    username = serializers.CharField(help_text="Your username.")
    role = serializers.CharField(help_text="system admin, department admin, researcher or viewer.")
    is_system_admin = serializers.BooleanField(help_text="Whether you manage everything.")
    managed_departments = serializers.ListField(
        child=serializers.CharField(), help_text="Departments you administer."
    )
    projects = serializers.ListField(
        child=serializers.DictField(child=serializers.CharField()),
        help_text="Your project memberships: [{project, role}].",
    )
