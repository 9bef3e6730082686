"""The gang plugin: a workload starts only when every group's min_pods fit together."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler_core.engine.framework.plugin import Plugin, register

if TYPE_CHECKING:
    from scheduler_core.engine.framework.state import WorkloadState


@register
class GangPlugin(Plugin):
    """All-or-nothing: min_pods of every group are placed in one go."""

    name = "gang"

    def gang_counts(self, w: WorkloadState) -> dict[str, int]:
        return w.min_counts()
