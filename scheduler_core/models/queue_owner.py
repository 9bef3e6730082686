"""What departments and projects share as queue owners: a name, a rank and an over-quota
weight among their peers, and a quota per pool."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Self

from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q

if TYPE_CHECKING:
    from django.db.models.fields.related_descriptors import RelatedManager


class QueueOwnerQuerySet(models.QuerySet["QueueOwner"]):
    def visible_to(self, user) -> Self:
        """Departments or projects `user` may see (the shared access rule)."""
        ids = self.model._default_manager.filter(self.model.access_q(user)).values("pk")
        return self.filter(pk__in=ids)


class QueueOwner(models.Model):
    """A level of the queue tree that owns queues: a department or a project.

    Each owns a quota per pool. Among peers (departments; the projects of one department),
    `rank` decides who is served over-quota first (higher first) and `over_quota_weight`
    divides over-quota GPUs among owners of the same rank.
    """

    # "department" or "project": also the name of the field that the rows it owns (quotas,
    # queue states, usage samples) point to it with.
    kind: ClassVar[str]
    # Who may see owners of this kind, as a Q over a field path (a rule of `access`).
    access_q: ClassVar[Callable[..., Q]]
    # The roles its members may have; `memberships` holds them (a reverse relation).
    member_roles: ClassVar[type[models.TextChoices]]
    memberships: RelatedManager[Any]

    name = models.SlugField(max_length=63, unique=True)
    description = models.CharField(max_length=255, blank=True)
    rank = models.IntegerField(default=0)
    over_quota_weight = models.FloatField(default=1.0, validators=[MinValueValidator(0)])
    created_at = models.DateTimeField(auto_now_add=True)

    objects = QueueOwnerQuerySet.as_manager()

    class Meta:
        abstract = True
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(over_quota_weight__gte=0), name="%(class)s_weight_gte_0"
            )
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def owner_key(self) -> tuple[str, int | None]:
        """(kind, id): the same as `QueueOwned.owner_key` of the rows it owns."""
        return (self.kind, self.pk)

    def managed_by(self, user) -> bool:
        """Whether `user` may change its settings, members and (for projects) quotas."""
        raise NotImplementedError
