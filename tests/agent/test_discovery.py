"""GPU discovery: NVML first, nvidia-smi next, none (said clearly) last; fake GPUs."""

import logging
import subprocess
from pathlib import Path
from types import SimpleNamespace

from fairway_agent.discovery import FAKE_MODEL, discover, discover_gpus, fake_gpus

DATA = Path(__file__).parent / "data"


def recorded(name: str):
    def run(argv):
        assert argv[0] == "nvidia-smi"
        return (DATA / name).read_text()

    return run


def no_nvml():
    raise OSError("libnvidia-ml.so.1: cannot open shared object file")


def no_nvidia_smi(argv):
    raise FileNotFoundError(2, "No such file or directory", "nvidia-smi")


def fake_nvml(models):
    """A stand-in for the pynvml module with the few calls discovery makes."""
    handles = [SimpleNamespace(index=i, model=m) for i, m in enumerate(models)]
    return SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlDeviceGetCount=lambda: len(handles),
        nvmlDeviceGetHandleByIndex=lambda i: handles[i],
        nvmlDeviceGetUUID=lambda h: f"GPU-0000-{h.index}".encode(),  # old releases: bytes
        nvmlDeviceGetName=lambda h: h.model,
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(total=143771 * 1024 * 1024, used=0),
    )


def test_nvml_devices_by_index_with_uuid_model_and_memory():
    devices, source = discover_gpus(
        node_name="n", nvml_loader=lambda: fake_nvml(["NVIDIA H200"] * 2), run_command=no_nvidia_smi
    )
    assert source == "nvml"
    assert devices == [
        {"index": 0, "uuid": "GPU-0000-0", "model": "NVIDIA H200", "memory_mib": 143771},
        {"index": 1, "uuid": "GPU-0000-1", "model": "NVIDIA H200", "memory_mib": 143771},
    ]


def test_nvidia_smi_when_nvml_fails_8xh100():
    devices, source = discover_gpus(
        node_name="n", nvml_loader=no_nvml, run_command=recorded("nvidia-smi-8xh100.csv")
    )
    assert source == "nvidia-smi"
    assert [d["index"] for d in devices] == list(range(8))
    assert devices[7] == {
        "index": 7,
        "uuid": "GPU-6f1d2a4b-0c3e-4f5a-8b9c-0d1e2f3a4b57",
        "model": "NVIDIA H100 80GB HBM3",
        "memory_mib": 81559,
    }


def test_nvidia_smi_h200():
    devices, _ = discover_gpus(
        node_name="n", nvml_loader=no_nvml, run_command=recorded("nvidia-smi-h200.csv")
    )
    assert devices == [
        {
            "index": 0,
            "uuid": "GPU-a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d",
            "model": "NVIDIA H200",
            "memory_mib": 143771,
        }
    ]


def test_neither_nvml_nor_nvidia_smi_means_no_gpus_and_says_why(caplog):
    def failing_smi(argv):
        raise subprocess.CalledProcessError(9, argv, "", "NVIDIA-SMI has failed")

    for run_command in (no_nvidia_smi, failing_smi):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            devices, source = discover_gpus(
                node_name="n", nvml_loader=no_nvml, run_command=run_command
            )
        assert (devices, source) == ([], "none")
        assert "no GPUs found" in caplog.text
        assert "libnvidia-ml" in caplog.text


def test_fake_gpus_are_stable_per_node_name():
    first = fake_gpus(3, "node-a")
    assert fake_gpus(3, "node-a") == first
    assert {d["uuid"] for d in fake_gpus(3, "node-b")}.isdisjoint(d["uuid"] for d in first)
    assert {d["model"] for d in first} == {FAKE_MODEL}
    inventory = discover(node_name="node-a", fake=3, nvml_loader=no_nvml)
    assert inventory.devices == first
    assert inventory.cpu >= 1 and inventory.memory_gib > 0
