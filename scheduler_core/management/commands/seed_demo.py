"""Load a demo cluster: 3 pools, 40 nodes, 3 departments, 8 projects, a user for every role,
and a few dozen workloads with simulated durations. Everything goes through the services,
like a real admin and real researchers would."""

from __future__ import annotations

import random
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from scheduler_core.choices import WorkloadKind
from scheduler_core.models import Department, NodePool, Project
from scheduler_core.services.cluster import node_create, pool_create
from scheduler_core.services.org import department_create, project_create, queue_owner_set_member
from scheduler_core.services.quotas import queue_owner_set_quota
from scheduler_core.services.workloads import WorkloadRequest, workload_submit

POOLS: list[tuple[str, int, int, str, int, int, dict[str, Any]]] = [
    # name, nodes, gpus per node, model, cpu, memory, settings
    (
        "a100",
        16,
        8,
        "A100-80GB",
        128,
        1024,
        {"placement": "binpack", "min_guaranteed_runtime": 120},
    ),
    ("h100", 8, 8, "H100-80GB", 192, 2048, {"placement": "binpack", "consolidation": True}),
    ("t4", 16, 4, "T4-16GB", 32, 256, {"placement": "spread", "policy": "quota"}),
]
DEPARTMENTS = [
    # name, rank, weight, {pool: gpus}
    ("research", 0, 2, {"a100": 64, "h100": 40, "t4": 16}),
    ("product", 1, 1, {"a100": 40, "h100": 16, "t4": 32}),
    ("platform", 0, 1, {"a100": 16, "h100": 8, "t4": 16}),
]
PROJECTS = [
    # name, department, weight, {pool: gpus}
    ("vision", "research", 2, {"a100": 32, "h100": 24, "t4": 8}),
    ("nlp", "research", 3, {"a100": 24, "h100": 16}),
    ("rl", "research", 1, {"a100": 8, "t4": 8}),
    ("search", "product", 1, {"a100": 16, "h100": 8, "t4": 16}),
    ("recsys", "product", 2, {"a100": 24, "h100": 8, "t4": 8}),
    ("speech", "product", 1, {"t4": 8}),
    ("infra", "platform", 1, {"a100": 8, "t4": 8}),
    ("eval", "platform", 1, {"a100": 8, "h100": 8, "t4": 8}),
]
USERS = [
    # username, password, role description, memberships
    ("admin", "fairway-admin", "system admin", []),
    ("dana", "fairway-dana", "department admin of research", [("dept", "research", "admin")]),
    (
        "alice",
        "fairway-alice",
        "researcher in vision and nlp",
        [("proj", "vision", "researcher"), ("proj", "nlp", "researcher")],
    ),
    (
        "bob",
        "fairway-bob",
        "researcher in search and recsys",
        [("proj", "search", "researcher"), ("proj", "recsys", "researcher")],
    ),
    ("carol", "fairway-carol", "researcher in rl", [("proj", "rl", "researcher")]),
    (
        "victor",
        "fairway-victor",
        "viewer of the research department",
        [("dept", "research", "viewer")],
    ),
]


class Command(BaseCommand):
    help = "Load the demo cluster (idempotent: does nothing if pools already exist)."

    def add_arguments(self, parser):
        parser.add_argument("--workloads", type=int, default=48)
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--force", action="store_true", help="Seed even if data exists.")

    def handle(self, *args, workloads: int, seed: int, force: bool, **options):
        if NodePool.objects.exists() and not force:
            self.stdout.write("demo data already present; skipping (use --force to add more)")
            self.print_users()
            return
        rng = random.Random(seed)
        with transaction.atomic():
            admin = self.make_users()
            self.make_cluster(admin)
            self.make_org(admin)
            self.make_workloads(admin, workloads, rng)
        self.stdout.write(self.style.SUCCESS("demo cluster loaded"))
        self.print_users()

    def make_users(self):
        User = get_user_model()
        admin = None
        for username, password, _desc, _m in USERS:
            user, _ = User.objects.get_or_create(username=username)
            user.set_password(password)
            if username == "admin":
                user.is_superuser = user.is_staff = True
                admin = user
            user.save()
        return admin

    def make_cluster(self, admin) -> None:
        for name, count, gpus, model, cpu, memory, settings in POOLS:
            pool = pool_create(user=admin, name=name, **settings)
            for i in range(1, count + 1):
                node_create(
                    user=admin,
                    pool=pool,
                    name=f"{name}-{i:02d}",
                    gpu_count=gpus,
                    gpu_model=model,
                    cpu=cpu,
                    memory=memory,
                    labels={"gpu": model.split("-")[0].lower(), "rack": f"r{(i - 1) // 4 + 1}"},
                )

    def make_org(self, admin) -> None:
        pools = {p.name: p for p in NodePool.objects.all()}
        for name, rank, weight, quotas in DEPARTMENTS:
            dept = department_create(user=admin, name=name, rank=rank, over_quota_weight=weight)
            for pool, gpus in quotas.items():
                queue_owner_set_quota(user=admin, owner=dept, pool=pools[pool], gpus=gpus)
        for name, dept_name, weight, quotas in PROJECTS:
            dept = Department.objects.get(name=dept_name)
            project = project_create(
                user=admin, department=dept, name=name, over_quota_weight=weight
            )
            for pool, gpus in quotas.items():
                queue_owner_set_quota(
                    user=admin, owner=project, pool=pools[pool], gpus=gpus, limit_gpus=gpus * 3
                )
        for username, _pw, _desc, memberships in USERS:
            for kind, target, role in memberships:
                model = Department if kind == "dept" else Project
                queue_owner_set_member(
                    user=admin,
                    owner=model.objects.get(name=target),
                    username=username,
                    role=model.member_roles(role),
                )

    def make_workloads(self, admin, count: int, rng: random.Random) -> None:
        projects = list(Project.objects.all())
        pools = {p.name: p for p in NodePool.objects.all()}
        shapes = [
            # kind, pods, min_pods, gpus, pools
            (WorkloadKind.TRAINING, 1, 1, 1, ["a100", "h100"]),
            (WorkloadKind.TRAINING, 4, 4, 2, ["a100"]),
            (WorkloadKind.TRAINING, 8, 2, 1, ["a100", "h100"]),
            (WorkloadKind.TRAINING, 2, 2, 8, ["h100"]),
            (WorkloadKind.INTERACTIVE, 1, 1, 1, ["t4", "a100"]),
            (WorkloadKind.INTERACTIVE, 1, 1, 0.5, ["t4"]),
            (WorkloadKind.INFERENCE, 2, 2, 1, ["t4"]),
            (WorkloadKind.CPU, 1, 1, 0, []),
        ]
        for i in range(count):
            project = projects[i % len(projects)]
            kind, pods, min_pods, gpus, pool_names = shapes[rng.randrange(len(shapes))]
            workload_submit(
                user=admin,
                request=WorkloadRequest(
                    project=project,
                    name=f"{kind}-{i + 1:03d}",
                    kind=kind,
                    pods=pods,
                    min_pods=min_pods,
                    gpus=gpus,
                    cpu=4 if kind == WorkloadKind.CPU else 8,
                    memory=32,
                    pools=[pools[n] for n in pool_names],
                    spec={
                        "image": "nvcr.io/nvidia/pytorch:24.10-py3",
                        "command": "python train.py",
                        "duration": rng.choice([120, 300, 600, 900, 1800]),
                        "checkpoint_every": 60,
                    },
                ),
            )

    def print_users(self) -> None:
        self.stdout.write("Demo users (demo passwords; change them for anything real):")
        for username, password, desc, _m in USERS:
            self.stdout.write(f"  {username:8s} / {password:16s} {desc}")
