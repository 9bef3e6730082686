"""A real Slurm for these tests: the cluster `bin/slurm start` runs (bin/test starts it and
exports SLURM_CONF). Where none answers, the tests that need it are skipped. `slurm_pool`:
a Fairway pool on it, with `submit`, `settle` (cycles and ticks as the worker and the beat
run them), `status` and `logs`."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from scheduler_core.choices import Backend
from scheduler_core.loop.cycle import run_cycle
from scheduler_core.models import Node, PodRun, Workload
from scheduler_core.runtime.executors.slurm.client import SlurmClient
from scheduler_core.runtime.executors.slurm.records import SlurmJob
from scheduler_core.runtime.tick import tick
from scheduler_core.selectors.agents import workload_logs
from scheduler_core.services.workloads import WorkloadRequest, workload_submit
from tests import factories

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


@pytest.fixture
def slurm_pool(slurm_conf: str, settings, tmp_path: Path):
    """A Slurm pool on bin/slurm's partition (4 nodes x 8 GPUs), a department deserving all
    of it and two projects: `high` deserving 32 GPUs, `low` deserving none."""
    settings.SLURM_CONF = slurm_conf
    settings.SLURM_JOB_PREFIX = f"fwt{time.monotonic_ns() % 10**8}"
    settings.SLURM_SUBMIT_GRACE = 3.0
    pool = factories.pool(
        "slurm", backend=Backend.SLURM, grace_period=2,
        backend_settings={"partition": PARTITION, "output_dir": str(tmp_path)},
    )  # fmt: skip
    dept = factories.department("lab")
    factories.quota(dept, pool, gpus=32)
    high, low = factories.project(dept, "high"), factories.project(dept, "low")
    factories.quota(high, pool, gpus=32)
    factories.quota(low, pool, gpus=0)
    resume_drained(SlurmClient(conf=slurm_conf))
    tick()  # the partition's nodes join the pool
    yield {"pool": pool, "high": high, "low": low, "admin": factories.user("root", superuser=True)}
    SlurmClient(conf=slurm_conf).cancel(
        int(r) for r in PodRun.objects.exclude(external_id="").values_list("external_id", flat=True)
    )


def submit(ctx, project: str, name: str, shell: str, *, pods: int = 1, gpus: int = 1, **kw):
    request = WorkloadRequest(
        project=ctx[project], name=name, pods=pods, gpus=float(gpus), pools=[ctx["pool"]],
        spec={"command": shell}, **kw,
    )  # fmt: skip
    return workload_submit(user=ctx["admin"], request=request)


def settle(done: Callable[[], bool], seconds: float = 30.0) -> None:
    """Cycles and runtime ticks, as the worker and the beat run them, until `done`."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"not settled in time: {_state()}")
        run_cycle()
        tick()
        time.sleep(0.2)


def _state() -> str:
    """Workloads, runs and nodes, for a test that did not settle."""
    return repr(
        [
            list(Workload.objects.values_list("name", "status", "pending_reason")),
            list(
                PodRun.objects.values_list("pk", "workload__name", "state", "external_id", "reason")
            ),
            list(Node.objects.values_list("name", "state", "gpu_count")),
        ]
    )


def status(workload: Workload) -> str:
    workload.refresh_from_db()
    return workload.status


def logs(workload: Workload) -> str:
    return "".join(log.text for log in workload_logs(workload=workload))
