"""Shared fixtures. Cycles requested by services are not run automatically in tests unless
a test asks for it (fixture `autorun_cycles`), so each test decides when the scheduler runs."""

import uuid

import pytest

from scheduler_core.loop.tasks import run_cycle_task
from scheduler_core.services.workloads import WorkloadRequest, workload_submit
from tests import factories

pytest_plugins = ["tests.exit_watchdog"]


@pytest.fixture(autouse=True)
def _no_autorun_cycles(settings):
    settings.SCHEDULER_AUTORUN = False
    settings.PENDING_REASON_REFRESH = 0  # every cycle rewrites reasons unless a test says


@pytest.fixture(autouse=True)
def _fresh_workload_memo():
    """Rolled-back tests hand out the same primary keys again: start each with an empty
    memo of workloads in the cycle task's loop state (scheduler_core.loop.tasks)."""
    run_cycle_task.loop_state = None
    yield
    run_cycle_task.loop_state = None


@pytest.fixture
def autorun_cycles(settings):
    settings.SCHEDULER_AUTORUN = True


@pytest.fixture
def cluster(db):
    """A small cluster: one pool of two 8-GPU nodes, a department with two projects and
    users for every role."""
    pool = factories.pool("a100")
    nodes = [factories.node(pool, f"gpu-{i}") for i in (1, 2)]
    dept = factories.department("research")
    other_dept = factories.department("ops")
    vision = factories.project(dept, "vision")
    nlp = factories.project(dept, "nlp")
    infra = factories.project(other_dept, "infra")
    factories.quota(dept, pool, gpus=12)
    factories.quota(vision, pool, gpus=8)
    factories.quota(nlp, pool, gpus=4)
    factories.quota(other_dept, pool, gpus=4)
    factories.quota(infra, pool, gpus=4)
    return {
        "pool": pool,
        "nodes": nodes,
        "dept": dept,
        "other_dept": other_dept,
        "vision": vision,
        "nlp": nlp,
        "infra": infra,
        "admin": factories.user("admin", superuser=True),
        "dept_admin": factories.department_admin(dept, "dept-admin"),
        "researcher": factories.researcher(vision, "alice"),
        "nlp_researcher": factories.researcher(nlp, "bob"),
        "viewer": factories.project_viewer(vision, "victor"),
        "outsider": factories.user("outsider"),
    }


@pytest.fixture(autouse=True)
def _isolated_scheduler_keys(settings):
    """Each test gets its own cycle lock and trigger keys (the Redis may be shared)."""
    settings.SCHEDULER_KEY_PREFIX = f"fairway-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def submit(cluster):
    """submit(project_key, name, gpus=1, user=..., **fields) -> Workload, via the service."""

    def _submit(project: str, name: str, gpus: float = 1, user=None, **fields):
        user = user or (cluster["nlp_researcher"] if project == "nlp" else cluster["admin"])
        request = WorkloadRequest(project=cluster[project], name=name, gpus=gpus, **fields)
        return workload_submit(user=user, request=request)

    return _submit
