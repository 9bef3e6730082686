"""The node agent `manage.py run --local-agent` (bin/up) starts for this machine: the pool
`local` it serves (an agent pool, made if missing, where every project may run over its
quota) and a fresh join token for it."""

from __future__ import annotations

import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from scheduler_core.choices import Backend
from scheduler_core.models import JoinToken, NodePool
from scheduler_core.services.agents import join_token_create

LOCAL_POOL = "local"
FAKE_GPUS = 2  # what a machine without NVIDIA GPUs offers, so the demo still runs pods
DESCRIPTION = "the local agent of manage.py run"


@dataclass(frozen=True)
class LocalAgent:
    state_dir: Path
    node_name: str
    join_token: str
    fake_gpus: int


def has_nvidia_gpus() -> bool:
    """Whether `nvidia-smi -L` lists a GPU here."""
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        listed = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return listed.returncode == 0 and "GPU" in listed.stdout


def node_name() -> str:
    """This machine's name as a node name (a slug)."""
    name = socket.gethostname().split(".")[0].lower()
    slug = "".join(c if c.isalnum() or c == "-" else "-" for c in name).strip("-")
    return slug[:63] or "local"


def prepare_local_agent(state_dir: Path) -> LocalAgent:
    """Make the pool `local` if missing and a join token for it (earlier tokens of this
    kind are revoked: only the newest run's agent may register)."""
    admin = get_user_model().objects.filter(is_superuser=True).order_by("pk").first()
    with transaction.atomic():
        pool, _ = NodePool.objects.get_or_create(
            name=LOCAL_POOL,
            defaults={
                "description": "This machine, run by its node agent (bin/up)",
                "backend": Backend.AGENT,
                "grace_period": 10,
            },
        )
        JoinToken.objects.filter(
            pool=pool, description=DESCRIPTION, revoked_at__isnull=True
        ).delete()
        _, raw = join_token_create(pool=pool, by=admin, description=DESCRIPTION)
    state_dir.mkdir(parents=True, exist_ok=True)
    return LocalAgent(
        state_dir=state_dir,
        node_name=node_name(),
        join_token=raw,
        fake_gpus=0 if has_nvidia_gpus() else FAKE_GPUS,
    )
