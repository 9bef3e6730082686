"""The local Slurm both sides run on: `bin/slurm` with accounting (slurmdbd + MariaDB),
multifactor fair-share and backfill, its own directory and ports; one account per team
whose fair-share is its quota (deserved GPUs)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from scheduler_core.runtime.executors.slurm.client import SlurmClient

ROOT = Path(__file__).resolve().parents[2]
PARTITION = "fairway"


def account(team: str) -> str:
    """The Slurm account of a team (names Slurm takes)."""
    return "t_" + re.sub(r"[^a-z0-9_]", "_", team.lower())


@dataclass
class BenchSlurm:
    """A Slurm cluster of `nodes` x `gpus` fake GPUs under `directory`."""

    directory: Path
    nodes: int
    gpus: int
    conf: str = ""

    def _env(self) -> dict[str, str]:
        return {
            **os.environ,
            "FAIRWAY_SLURM_DIR": str(self.directory),
            "FAIRWAY_SLURM_NODES": str(self.nodes),
            "FAIRWAY_SLURM_GPUS": str(self.gpus),
            "FAIRWAY_SLURM_ACCOUNTING": "1",
            "FAIRWAY_SLURM_PORT": "47800",
        }

    def start(self) -> SlurmClient:
        """A fresh cluster (no jobs, no usage history); its client."""
        self.stop()
        shutil.rmtree(self.directory / "mysql", ignore_errors=True)  # no accounts or usage
        done = subprocess.run(
            [str(ROOT / "bin" / "slurm"), "start"], env=self._env(), capture_output=True,
            text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"bin/slurm start failed: {done.stderr.strip()}")
        self.conf = done.stdout.strip().rsplit("=", 1)[-1]
        return SlurmClient(conf=self.conf, timeout=30)

    def stop(self) -> None:
        subprocess.run(
            [str(ROOT / "bin" / "slurm"), "stop"], env=self._env(), capture_output=True,
            check=False,
        )  # fmt: skip

    def add_accounts(self, client: SlurmClient, quotas: Mapping[str, float]) -> None:
        """One account per team, fair-share = its deserved GPUs (at least 1), user root in
        each."""
        for team, gpus in sorted(quotas.items()):
            name = account(team)
            shares = max(1, round(gpus))
            client.run(["sacctmgr", "-i", "add", "account", name, f"fairshare={shares}"])
            client.run(["sacctmgr", "-i", "add", "user", "root", f"account={name}"])

    def controller_cpu_seconds(self) -> float:
        """CPU time slurmctld has used so far."""
        pid = (self.directory / "run" / "slurmctld.pid").read_text().strip()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks
