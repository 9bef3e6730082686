"""What can go wrong talking to Slurm, as typed exceptions the executor turns into pool
states and workload reasons."""

from __future__ import annotations


class SlurmError(Exception):
    """A Slurm command failed; `message` is Slurm's own words."""

    def __init__(self, message: str, *, command: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.command = command


class SlurmUnavailable(SlurmError):
    """The controller cannot be reached (down, restarting, network): nothing was decided;
    try again later."""


class SlurmRejected(SlurmError):
    """Slurm refused a request it understood (a job it will not take, an unknown node):
    retrying the same request will not help."""


class SlurmOutputError(SlurmError):
    """A command answered something that does not read as its documented output."""
