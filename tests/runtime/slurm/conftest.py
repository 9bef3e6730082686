"""A real Slurm for these tests: the cluster `bin/slurm start` runs (bin/test starts it and
exports SLURM_CONF). Where none answers, the tests that need it are skipped."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from scheduler_core.runtime.executors.slurm.client import SlurmClient
from scheduler_core.runtime.executors.slurm.records import SlurmJob

PARTITION = "fairway"  # bin/slurm's partition


@pytest.fixture(scope="session")
def slurm_conf() -> str:
    conf = os.environ.get("SLURM_CONF", "")
    if not conf or not Path(conf).is_file():
        pytest.skip('no Slurm cluster: run `eval "$(bin/slurm start)"` (bin/test does)')
    client = SlurmClient(conf=conf, timeout=10)
    if not client.ping():
        pytest.skip(f"the Slurm controller of {conf} does not answer")
    resume_drained(client)
    return conf


def resume_drained(client: SlurmClient) -> None:
    """Nodes a test left drained (Slurm drains a node that reports a job id a restarted
    controller gave again) take jobs again."""
    drained = [n.name for n in client.nodes(PARTITION) if n.flags & {"DRAIN", "DRAINED"}]
    if drained:
        client.run(["scontrol", "update", f"nodename={','.join(drained)}", "state=resume"])


@pytest.fixture
def slurm(slurm_conf: str) -> Iterator[SlurmClient]:
    """A client of the test cluster; the jobs a test submitted are cancelled after it."""
    client = TrackingClient(conf=slurm_conf, timeout=15)
    resume_drained(client)
    yield client
    client.cancel(client.submitted)


class TrackingClient(SlurmClient):
    """Remembers what it submitted, so a test leaves no job behind."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.submitted: list[int] = []

    def submit(self, request, *, hold: bool = True) -> int:
        job_id = super().submit(request, hold=hold)
        self.submitted.append(job_id)
        return job_id


@pytest.fixture
def tag() -> str:
    return f"fwtest-{uuid.uuid4().hex[:10]}"


def wait_for(
    client: SlurmClient, job_id: int, done: Callable[[list[SlurmJob]], bool], seconds: float = 20
) -> list[SlurmJob]:
    """The job's entries (a heterogeneous job has one per component) once `done` holds."""
    deadline = time.monotonic() + seconds
    while True:
        jobs = [j for j in client.jobs() if j.root_id == job_id]
        if jobs and done(jobs):
            return jobs
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} did not get there: {jobs}")
        time.sleep(0.2)


def wait_file(path: Path, text: str, seconds: float = 20) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and text in (content := path.read_text()):
            return content
        time.sleep(0.1)
    raise AssertionError(
        f"{path} never said {text!r}: {path.read_text() if path.exists() else 'no file'}"
    )
