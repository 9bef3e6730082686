"""What this node has: GPUs (NVML, else nvidia-smi, else none; or fake ones for tests and
demos), CPU cores and memory.

A device is the protocol's `{"index", "uuid", "model", "memory_mib"}`.
"""

from __future__ import annotations

import logging
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import psutil  # type: ignore[import-untyped]

log = logging.getLogger(__name__)

FAKE_MODEL = "Fake GPU"
FAKE_MEMORY_MIB = 81920
_FAKE_NAMESPACE = uuid.UUID("5d6f2c1e-7a43-4b8e-9c0f-2f6a1b3d4e50")
NVIDIA_SMI_QUERY = [
    "nvidia-smi",
    "--query-gpu=index,uuid,name,memory.total",
    "--format=csv,noheader,nounits",
]

Device = dict[str, Any]
CommandRunner = Callable[[list[str]], str]


@dataclass(frozen=True)
class Inventory:
    """The node's resources as registration and hello report them."""

    devices: list[Device]
    cpu: int
    memory_gib: float
    source: str  # "nvml", "nvidia-smi", "fake" or "none"


def fake_gpus(count: int, node_name: str) -> list[Device]:
    """`count` fake GPUs whose UUIDs stay the same for the same node name."""
    return [
        {
            "index": i,
            "uuid": f"GPU-{uuid.uuid5(_FAKE_NAMESPACE, f'{node_name}/{i}')}",
            "model": FAKE_MODEL,
            "memory_mib": FAKE_MEMORY_MIB,
        }
        for i in range(count)
    ]


def _text(value: str | bytes) -> str:
    # Older nvidia-ml-py releases return bytes.
    return value.decode() if isinstance(value, bytes) else value


def gpus_from_nvml(nvml: ModuleType) -> list[Device]:
    """GPUs by NVML (the `pynvml` module); raises whatever NVML raises when it cannot."""
    nvml.nvmlInit()
    devices = []
    for i in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(i)
        devices.append(
            {
                "index": i,
                "uuid": _text(nvml.nvmlDeviceGetUUID(handle)),
                "model": _text(nvml.nvmlDeviceGetName(handle)),
                "memory_mib": int(nvml.nvmlDeviceGetMemoryInfo(handle).total) // (1024 * 1024),
            }
        )
    return devices


def parse_nvidia_smi(csv_text: str) -> list[Device]:
    """Devices from `nvidia-smi --query-gpu=index,uuid,name,memory.total
    --format=csv,noheader,nounits` output."""
    devices = []
    for line in csv_text.splitlines():
        if not line.strip():
            continue
        index, gpu_uuid, name, memory = (part.strip() for part in line.split(",", 3))
        devices.append(
            {"index": int(index), "uuid": gpu_uuid, "model": name, "memory_mib": int(memory)}
        )
    return sorted(devices, key=lambda d: d["index"])


def _run_nvidia_smi(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True, timeout=30).stdout


def load_nvml() -> ModuleType:
    import pynvml  # type: ignore[import-untyped]

    return pynvml


def discover_gpus(
    *,
    node_name: str,
    fake: int | None = None,
    nvml_loader: Callable[[], ModuleType] = load_nvml,
    run_command: CommandRunner = _run_nvidia_smi,
) -> tuple[list[Device], str]:
    """The GPUs and where they were found: fake ones when asked, else NVML, else
    nvidia-smi, else none (with one log line saying why)."""
    if fake is not None:
        return fake_gpus(fake, node_name), "fake"
    try:
        return gpus_from_nvml(nvml_loader()), "nvml"
    except Exception as exc:
        nvml_error = f"{type(exc).__name__}: {exc}"
        log.debug("NVML unavailable (%s), trying nvidia-smi", nvml_error)
    try:
        return parse_nvidia_smi(run_command(NVIDIA_SMI_QUERY)), "nvidia-smi"
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        log.warning(
            "no GPUs found: NVML failed (%s) and nvidia-smi failed (%s: %s); "
            "this node offers CPU only (use --fake-gpus N to try Fairway without GPUs)",
            nvml_error,
            type(exc).__name__,
            exc,
        )
        return [], "none"


def discover(
    *,
    node_name: str,
    fake: int | None = None,
    nvml_loader: Callable[[], ModuleType] = load_nvml,
    run_command: CommandRunner = _run_nvidia_smi,
) -> Inventory:
    """Everything this node offers."""
    devices, source = discover_gpus(
        node_name=node_name, fake=fake, nvml_loader=nvml_loader, run_command=run_command
    )
    memory_gib = round(psutil.virtual_memory().total / 1024**3, 1)
    return Inventory(
        devices=devices, cpu=psutil.cpu_count() or 1, memory_gib=memory_gib, source=source
    )
