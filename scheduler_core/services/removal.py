"""Deleting departments, projects, pools and nodes.

Nothing is deleted out from under running work: a project with unfinished workloads, a
department with projects, a pool with nodes (or that waiting workloads count on) and a
node with pods are refused with `ResourceInUse`, which says what to do first.
"""

from __future__ import annotations

from django.db import transaction

from scheduler_core import access
from scheduler_core.choices import TERMINAL_STATES
from scheduler_core.loop.triggers import request_cycle
from scheduler_core.models import (
    Allocation,
    Department,
    Node,
    NodePool,
    Project,
    Workload,
    WorkloadCandidatePool,
)
from scheduler_core.services.agents import node_connections_close
from scheduler_core.services.errors import Conflict
from scheduler_core.services.org import require_manager


class ResourceInUse(Conflict):
    """The resource is still needed by something; the message says what to do first."""


def _names(qs, limit: int = 5) -> str:
    names = list(qs.values_list("name", flat=True)[: limit + 1])
    shown = ", ".join(names[:limit])
    return shown + (", ..." if len(names) > limit else "")


def department_delete(*, user, department: Department) -> None:
    """Delete a department with no projects (system admins); its quotas go with it."""
    access.require_system_admin(user, "delete departments")
    projects = Project.objects.filter(department=department)
    if projects.exists():
        raise ResourceInUse(
            f"department {department} still has projects ({_names(projects)}): delete them first"
        )
    with transaction.atomic():
        department.delete()
        request_cycle()


def project_delete(*, user, project: Project) -> None:
    """Delete a project whose workloads have all finished; their history goes with it."""
    require_manager(user, project)
    unfinished = Workload.objects.filter(project=project).exclude(status__in=TERMINAL_STATES)
    count = unfinished.count()
    if count:
        raise ResourceInUse(
            f"project {project} has {count} unfinished workload{'s' if count > 1 else ''} "
            f"({_names(unfinished)}): cancel them first"
        )
    with transaction.atomic():
        Workload.objects.filter(project=project).delete()
        project.delete()
        request_cycle()


def pool_delete(*, user, pool: NodePool) -> None:
    """Delete an empty pool (system admins) that no unfinished workload is limited to."""
    access.require_system_admin(user, "delete pools")
    nodes = Node.objects.filter(pool=pool)
    if nodes.exists():
        raise ResourceInUse(f"pool {pool} still has nodes ({_names(nodes)}): delete them first")
    waiting = (
        WorkloadCandidatePool.objects.filter(pool=pool)
        .exclude(workload__status__in=TERMINAL_STATES)
        .count()
    )
    if waiting:
        raise ResourceInUse(
            f"{waiting} unfinished workload{'s' if waiting > 1 else ''} list pool {pool} as a "
            "candidate: cancel them first"
        )
    with transaction.atomic():
        pool.delete()
        request_cycle()


def node_delete(*, user, node: Node) -> None:
    """Remove a node without pods (system admins): drain it first."""
    access.require_system_admin(user, "delete nodes")
    with transaction.atomic():
        node = Node.objects.select_for_update().get(pk=node.pk)
        if Allocation.objects.filter(node=node).exists():
            raise ResourceInUse(f"node {node} still runs pods: drain it first")
        node_connections_close(node.pk, f"node {node.name} was deleted")
        node.delete()
        request_cycle()
