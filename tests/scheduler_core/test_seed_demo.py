"""The demo cluster the README promises."""

import pytest
from django.core.management import call_command

from scheduler_core.models import Department, Node, NodePool, Project, Workload

pytestmark = pytest.mark.django_db


def test_seed_demo_builds_a_demo_cluster_once(capsys):
    call_command("seed_demo", workloads=30)
    out = capsys.readouterr().out
    assert NodePool.objects.count() == 3
    assert 35 <= Node.objects.count() <= 45
    assert Department.objects.count() == 3
    assert Project.objects.count() == 8
    assert Workload.objects.count() == 30
    for username in ("admin", "dana", "alice", "victor"):
        assert username in out
    assert "fairway-admin" in out  # passwords are printed
    call_command("seed_demo")
    assert Workload.objects.count() == 30  # idempotent
