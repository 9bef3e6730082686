"""Kind defaults are one function: a workload gets the same priority and preemptibility
whether it is submitted live or in a scenario file."""

from __future__ import annotations

import pytest

from scheduler_core.services.workloads import WorkloadRequest, workload_submit
from scheduler_core.whatif.scenarios import load_scenario

SCENARIO = """
nodes: [{name: n1, gpus: 8}]
projects: [{name: vision}]
workloads:
  - {name: notebook, project: vision, kind: interactive, priority: 50, gpus: 1}
  - {name: serving, project: vision, kind: inference, gpus: 1}
  - {name: urgent, project: vision, priority: 100, gpus: 1}
"""


@pytest.mark.django_db
def test_live_and_scenario_submissions_get_the_same_defaults(cluster):
    from_file = {w.id: (w.priority, w.preemptible) for w in load_scenario(SCENARIO).workloads}
    live = {}
    for name, kind, priority in (
        ("notebook", "interactive", 50),
        ("serving", "inference", None),
        ("urgent", "training", 100),
    ):
        request = WorkloadRequest(
            project=cluster["vision"], name=name, kind=kind, priority=priority, gpus=1
        )
        workload = workload_submit(user=cluster["researcher"], request=request)
        live[name] = (workload.priority, workload.preemptible)
    assert live == from_file
    assert live["notebook"] == (50, False)  # FORMAT.md: only training and cpu are preemptible
