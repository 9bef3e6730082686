"""The load test's profiles: Kueue's loads as `manage.py loadtest --profile` replays them
(the loads themselves run from the command, never in the suite)."""

from __future__ import annotations

import pytest

from benchmarks.loadtest import PROFILES, LoadTest, LoadTestError
from scheduler_core.models import Node, Project, Quota
from tests import factories


def _load(profile: str) -> LoadTest:
    return LoadTest(write=lambda _: None, warn=lambda _: None, profile=PROFILES[profile])


@pytest.mark.parametrize(
    ("profile", "workloads", "span", "ideal"),
    [("baseline", 15_000, 58.8, 66.0), ("large-scale", 50_000, 3.0, 4.0)],
)
def test_each_profile_submits_kueues_load(
    profile: str, workloads: int, span: float, ideal: float
) -> None:
    """50,000 workloads of Kueue's large-scale test arrive within 3 s and need 4 s of
    the whole cluster; the baseline is unchanged."""
    arrivals = _load(profile).arrivals(1.0)
    work = sum(gpus * seconds for _, _, _, gpus, seconds, _ in arrivals)
    assert len(arrivals) == workloads
    assert arrivals[-1][0] == pytest.approx(span)
    assert work / PROFILES[profile].gpus == pytest.approx(ideal, abs=0.05)
    assert {(gpus, priority) for _, _, _, gpus, _, priority in arrivals} == {
        (1, 50), (5, 100), (20, 200)
    }  # fmt: skip


@pytest.mark.django_db
def test_the_large_scale_cluster_is_built_and_cleaned() -> None:
    """10 departments x 100 projects of quota 20 (limit 120) on 2,500 nodes of 8 GPUs,
    gone again after the run."""
    load = _load("large-scale")
    pool, projects = load.build()
    assert len(projects) == 1000
    assert Node.objects.filter(pool=pool).count() == 2500
    quota = Quota.objects.get(project=projects["proj-9-99"])
    assert (quota.gpus, quota.limit_gpus) == (20, 120)
    load.clean()
    assert not Project.objects.filter(name__startswith="lt-").exists()


@pytest.mark.django_db
def test_a_workload_outside_the_load_on_its_nodes_stops_the_clean_with_a_message() -> None:
    """Someone's workload placed on the load's pool (a database shared with other use):
    the run says so and deletes nothing, instead of failing halfway with a traceback."""
    load = _load("baseline")
    pool, _ = load.build()
    project = factories.project(factories.department("research"), "vision")
    factories.running_workload(project, [Node.objects.filter(pool=pool).first()], name="mine")
    with pytest.raises(LoadTestError, match=r"vision/mine.*cancel them"):
        load.clean()
    assert Project.objects.filter(name__startswith="lt-").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("pool_profile", "holds", "bound"), [("kai", False, None), ("lab", True, 2)]
)
def test_the_pool_gets_the_policy_profile_asked_for(
    pool_profile: str, holds: bool, bound: int | None
) -> None:
    """`--pool-profile`: KAI's settings unless told (every figure in docs/loadtest.md),
    or what a new pool gets (lab)."""
    load = LoadTest(
        write=lambda _: None,
        warn=lambda _: None,
        profile=PROFILES["baseline"],
        pool_profile=pool_profile,
    )
    pool, _ = load.build()
    assert pool.reserve_for_gangs is holds
    assert pool.max_preemptions_per_workload == bound
    load.clean()


@pytest.mark.parametrize(
    ("scale", "lines"),
    [
        (
            1.0,
            [
                "Targets:",
                "  nothing lost: MET (0 lost)",
                "  drain <= 72 s: NOT MET (74.9 s)",
                "  GPU usage >= 90 %: MET (90.2 %)",
            ],
        ),
        (
            0.1,
            [
                "Targets:",
                "  nothing lost: MET (0 lost)",
                "  the others are the full load's: not judged at --scale 0.1",
            ],
        ),
    ],
)
def test_a_quick_run_does_not_claim_the_full_loads_targets(scale: float, lines: list[str]) -> None:
    """`--scale 0.1` drains in seconds: its drain says nothing about the 72 s target."""
    written: list[str] = []
    load = LoadTest(write=written.append, warn=lambda _: None, profile=PROFILES["baseline"])
    load._verdicts(makespan=74.9, usage=90.2, lost=0, slowest=0.3, scale=scale)
    assert written == lines
