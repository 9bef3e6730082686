"""A Slurm pool's own settings (NodePool.backend_settings), declared once: the pool form,
the API and the executor read them from this model. The installation-wide ones (which
cluster, as whom) are Django settings: SLURM_CONF, SLURM_OUTPUT_DIR, SLURM_JOB_PREFIX,
SLURM_COMMAND_TIMEOUT."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from django.conf import settings
from pydantic import Field

from scheduler_core.schemas.base import StrictModel, one_of

SIGNALS = ("TERM", "INT", "USR1", "USR2", "HUP", "QUIT")
PartitionName = Annotated[str, Field(max_length=64, pattern=r"^[A-Za-z0-9_.-]*$")]
Signal = Annotated[str, one_of(SIGNALS)]
Account = Annotated[str, Field(max_length=64, pattern=r"^[A-Za-z0-9_.-]*$")]
Directory = Annotated[str, Field(max_length=1024, pattern=r"^(/.*)?$")]


class SlurmPoolSettings(StrictModel):
    """Where a Slurm pool's pods run and how they are stopped."""

    partition: PartitionName = Field(
        default="", description="The Slurm partition of this pool (empty: the pool's name)."
    )
    preempt_signal: Signal = Field(
        default="TERM",
        description="Signal a preempted pod gets; it is killed after the pool's grace period.",
    )
    account: Account = Field(default="", description="Slurm account jobs are charged to.")
    output_dir: Directory = Field(
        default="",
        description="Directory (shared with the nodes) for the pods' output files; empty: "
        "SLURM_OUTPUT_DIR.",
    )


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
