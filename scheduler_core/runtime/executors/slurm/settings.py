"""A Slurm pool's own settings (NodePool.backend_settings, declared in
schemas.backends.SlurmPoolSettings) with their defaults, and the installation-wide ones
(which cluster, as whom): Django settings SLURM_CONF, SLURM_OUTPUT_DIR, SLURM_JOB_PREFIX,
SLURM_COMMAND_TIMEOUT, SLURM_SUBMIT_GRACE."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

from scheduler_core.schemas.backends import SlurmPoolSettings


def pool_settings(pool_name: str, raw: Any) -> tuple[SlurmPoolSettings, str, Path]:
    """A pool's settings, its partition and its output directory, filled with defaults."""
    values = SlurmPoolSettings.model_validate(raw or {})
    partition = values.partition or pool_name
    directory = Path(values.output_dir or output_root())
    return values, partition, directory


def output_root() -> str:
    return str(getattr(settings, "SLURM_OUTPUT_DIR", "") or Path(settings.VAR_DIR) / "slurm-output")


def job_prefix() -> str:
    return str(getattr(settings, "SLURM_JOB_PREFIX", "fairway"))
