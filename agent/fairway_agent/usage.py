"""Usage samples: per GPU (NVML; fake GPUs report zeros) and per run (psutil, summed over
the run's process group)."""

from __future__ import annotations

import contextlib
import logging
import time
from types import ModuleType
from typing import Any

import psutil  # type: ignore[import-untyped]

from fairway_agent.discovery import Device
from fairway_agent.procgroup import group_members
from fairway_agent.runs import iso

log = logging.getLogger(__name__)


class GpuSampler:
    """Utilisation and memory of each GPU; NVML when the devices came from it."""

    def __init__(self, devices: list[Device], nvml: ModuleType | None) -> None:
        self.devices = devices
        self.nvml = nvml

    def sample(self) -> list[dict[str, Any]]:
        samples = []
        for device in self.devices:
            utilization, used = 0, 0
            if self.nvml is not None:
                try:
                    handle = self.nvml.nvmlDeviceGetHandleByIndex(device["index"])
                    utilization = int(self.nvml.nvmlDeviceGetUtilizationRates(handle).gpu)
                    used = int(self.nvml.nvmlDeviceGetMemoryInfo(handle).used) // (1024 * 1024)
                except Exception as exc:  # a GPU that falls off the bus must not stop us
                    log.debug("NVML sample of GPU %s failed: %s", device["index"], exc)
            samples.append(
                {
                    "index": device["index"],
                    "utilization": utilization,
                    "memory_used_mib": used,
                    "memory_total_mib": device["memory_mib"],
                }
            )
        return samples


class RunSampler:
    """CPU percent and resident memory of each run's process group. CPU percent is
    measured between two calls, so the first sample of a process counts 0."""

    def __init__(self) -> None:
        self._procs: dict[int, psutil.Process] = {}

    def sample(self, groups: dict[Any, int]) -> list[dict[str, Any]]:
        seen: dict[int, psutil.Process] = {}
        samples = []
        for run, pgid in groups.items():
            cpu, rss = 0.0, 0
            for member in group_members(pgid):
                proc = self._procs.get(member.pid, member)
                with contextlib.suppress(psutil.Error):
                    cpu += proc.cpu_percent(None)
                    rss += proc.memory_info().rss
                    seen[member.pid] = proc
            samples.append({"run": run, "cpu_percent": round(cpu, 1), "rss_mib": rss // 2**20})
        self._procs = seen
        return samples


def usage_message(gpus: GpuSampler, runs: RunSampler, groups: dict[Any, int]) -> dict[str, Any]:
    """The body of a `usage` message."""
    return {"at": iso(time.time()), "gpus": gpus.sample(), "runs": runs.sample(groups)}
