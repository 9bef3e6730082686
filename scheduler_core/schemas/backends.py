"""Each backend's own pool settings (NodePool.backend_settings), declared once: the API
and the pool service check them here, and the backend's executor reads them
(`settings_model`). A backend without an entry takes none."""

from __future__ import annotations

from typing import Annotated

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


BACKEND_SETTINGS: dict[str, type[StrictModel]] = {"slurm": SlurmPoolSettings}
