"""What-if runs."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from scheduler_core.choices import SimulationSource, SimulationStatus


class Simulation(models.Model):
    """A what-if run in a worker: a scenario file, a copy of the live cluster with changes,
    or a job trace replayed on a synthetic cluster (`trace_text`, a CSV in the Philly
    columns, and `trace_options`: see scheduler_core.whatif.trace_runs).

    `progress` goes 0..1 while it runs; `result` holds per-step outcomes, or for a live copy
    the baseline and the changed run side by side, or for a trace the figures of the
    engine, FIFO and FIFO with backfill side by side.
    """

    name = models.CharField(max_length=120)
    source = models.CharField(max_length=16, choices=SimulationSource.choices)
    scenario_text = models.TextField(blank=True)
    changes = models.JSONField(default=dict, blank=True)
    trace_text = models.TextField(blank=True)
    trace_options = models.JSONField(default=dict, blank=True)
    horizon = models.PositiveIntegerField(default=3600, help_text="Simulated seconds.")
    status = models.CharField(
        max_length=16, choices=SimulationStatus.choices, default=SimulationStatus.QUEUED
    )
    progress = models.FloatField(default=0)
    progress_message = models.CharField(max_length=255, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(progress__gte=0, progress__lte=1), name="simulation_progress_0_1"
            )
        ]

    def __str__(self) -> str:
        return self.name
