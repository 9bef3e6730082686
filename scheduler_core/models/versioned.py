"""Rows whose `version` rises with every change that matters to scheduling.

The scheduling cycle trusts versions twice: its snapshot memo keeps what a workload
cannot change without a new version, and its apply step drops a decision whose workload
or node changed version since the snapshot. So the version is raised in one place that
every writer goes through: `save()` of an existing row (services, the Django admin,
scripts) raises it, unless only fields that do not matter to scheduling are saved. The
bulk writes of the hot path, which bypass `save()`, raise it with `bump_version`.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol

from django.db import models


class HasVersion(Protocol):
    version: int


def bump_version(row: HasVersion) -> None:
    """Raise `row`'s version (in memory; the caller writes it)."""
    row.version += 1


class VersionedModel(models.Model):
    """A model with a `version` field that every save of a change raises."""

    UNVERSIONED_FIELDS: ClassVar[frozenset[str]] = frozenset()
    """Fields whose changes do not matter to scheduling (a save of only these keeps the
    version: a node's heartbeat, say)."""

    version: int

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        update_fields = kwargs.get("update_fields")
        if not self._state.adding and (
            update_fields is None or set(update_fields) - self.UNVERSIONED_FIELDS
        ):
            bump_version(self)
            if update_fields is not None:
                kwargs["update_fields"] = {*update_fields, "version"}
        super().save(*args, **kwargs)
