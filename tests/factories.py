"""Factories for tests: small functions that build valid objects with sensible defaults."""

from __future__ import annotations

import itertools
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from scheduler_core.choices import DepartmentRole, ProjectRole, WorkloadStatus
from scheduler_core.models import (
    Allocation,
    Department,
    DepartmentMembership,
    Node,
    NodePool,
    Project,
    ProjectMembership,
    Quota,
    Workload,
)

_seq = itertools.count(1)


def n() -> int:
    return next(_seq)


def user(username: str | None = None, *, superuser: bool = False, password: str = "pw-12345678"):
    User = get_user_model()
    username = username or f"user-{n()}"
    if superuser:
        return User.objects.create_superuser(username=username, password=password, email="")
    return User.objects.create_user(username=username, password=password)


def pool(name: str | None = None, **kwargs: Any) -> NodePool:
    return NodePool.objects.create(name=name or f"pool-{n()}", **kwargs)


def node(pool_obj: NodePool | None = None, name: str | None = None, **kwargs: Any) -> Node:
    kwargs.setdefault("gpu_count", 8)
    kwargs.setdefault("cpu", 64)
    kwargs.setdefault("memory", 512)
    return Node.objects.create(pool=pool_obj or pool(), name=name or f"node-{n()}", **kwargs)


def department(name: str | None = None, **kwargs: Any) -> Department:
    return Department.objects.create(name=name or f"dept-{n()}", **kwargs)


def project(dept: Department | None = None, name: str | None = None, **kwargs: Any) -> Project:
    return Project.objects.create(
        department=dept or department(), name=name or f"proj-{n()}", **kwargs
    )


def quota(owner: Department | Project, pool_obj: NodePool, gpus: float = 0, **kwargs: Any) -> Quota:
    return Quota.objects.create(owner=owner, pool=pool_obj, gpus=gpus, **kwargs)


def researcher(proj: Project, username: str | None = None):
    u = user(username)
    ProjectMembership.objects.create(project=proj, user=u, role=ProjectRole.RESEARCHER)
    return u


def project_viewer(proj: Project, username: str | None = None):
    u = user(username)
    ProjectMembership.objects.create(project=proj, user=u, role=ProjectRole.VIEWER)
    return u


def department_admin(dept: Department, username: str | None = None):
    u = user(username)
    DepartmentMembership.objects.create(department=dept, user=u, role=DepartmentRole.ADMIN)
    return u


def department_viewer(dept: Department, username: str | None = None):
    u = user(username)
    DepartmentMembership.objects.create(department=dept, user=u, role=DepartmentRole.VIEWER)
    return u


def workload(proj: Project, name: str | None = None, **kwargs: Any) -> Workload:
    kwargs.setdefault("submitted_at", timezone.now())
    kwargs.setdefault("gpus", 1)
    return Workload.objects.create(project=proj, name=name or f"wl-{n()}", **kwargs)


def running_workload(proj: Project, nodes: list[Node], **kwargs: Any) -> Workload:
    """A running workload with one whole-GPU pod per node in `nodes`."""
    kwargs.setdefault("pods", len(nodes))
    kwargs.setdefault("min_pods", len(nodes))
    w = workload(proj, status=WorkloadStatus.RUNNING, started_at=timezone.now(), **kwargs)
    used: dict[int, int] = {}
    for i, nd in enumerate(nodes):
        start = used.get(nd.pk, 0)
        count = int(w.gpus)
        Allocation.objects.create(
            workload=w,
            pod_index=i,
            node=nd,
            gpu_devices=list(range(start, start + count)),
            gpu_fraction=1.0 if w.gpus >= 1 else w.gpus,
        )
        used[nd.pk] = start + count
    return w


# A scenario file of one node, one project and one workload (what-if runs from a file).
TINY_SCENARIO = """
name: tiny
nodes: [{name: n1, pool: default, gpus: 8}]
departments: [{name: d, quota: {default: {gpus: 8}}}]
projects: [{name: p, department: d, quota: {default: {gpus: 8}}}]
workloads: [{name: w1, project: p, gpus: 4}]
steps: [{at: 0}]
"""


# A job trace (Philly columns): team a (half the quota) fills 4 nodes of 8 GPUs first;
# team b's 16-GPU gang arrives 10 min later; the job at 23:00 is outside a 2-hour window.
TRACE_CSV = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-25 19:00:00,7200,8,0,a
2017-10-25 19:00:00,7200,8,0,a
2017-10-25 19:00:00,7200,8,0,a
2017-10-25 19:00:00,7200,8,0,a
2017-10-25 19:10:00,1800,16,0,b
2017-10-25 19:20:00,600,1,0,a
2017-10-25 23:00:00,600,1,0,a
"""
TRACE_OPTIONS = {
    "start": "2017-10-25T19:00",
    "hours": 2,
    "nodes": 4,
    "team_nodes": {"a": 1, "b": 1},
}
