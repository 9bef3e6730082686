"""What a node agent may say (docs/agent.md, "The websocket protocol" and registration): one
schema per message, so every number an agent sends is finite and within the range the
database and the scheduler can hold, every list and text has a size, and a bad message is
refused with the field that is wrong and why (the consumer answers with an error frame).

The envelope (`v`, `seq`, `type`, `ack`) is checked by `fairway_agent.protocol.decode`;
these models check the body and ignore the envelope's keys.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from scheduler_core.schemas.base import (
    NodeCPU,
    NodeMemory,
    StrictModel,
    number,
    rule_error,
    show,
    whole,
)
from scheduler_core.schemas.workloads import MAX_PORTS, PortName

MAX_DEVICES = 64
"""GPUs one node may report (the largest machines have 16; room for MIG slices)."""
MAX_DEVICE_INDEX = 1023
MAX_DEVICE_MEMORY_MIB = 16 * 1024 * 1024  # 16 TiB
MAX_RUNS_IN_HELLO = 10_000
MAX_RUNS_IN_USAGE = 1024
MAX_CAPABILITIES = 32
MAX_ID = 2**63 - 1  # a database bigint
MAX_EPOCH = 2**63 - 1
MAX_LOG_OFFSET = 2**62
MAX_LOG_CHUNK_BASE64 = 4 * 64 * 1024  # the agent sends chunks of at most 64 KiB
MAX_EXIT_CODE = 255
MAX_SIGNAL_NAME = 16
MAX_REASON = 2000
MAX_TEXT = 255

RunId = Annotated[int, whole(ge=1, le=MAX_ID)]
Epoch = Annotated[int, whole(ge=0, le=MAX_EPOCH)]
ExitCode = Annotated[int, whole(ge=-MAX_EXIT_CODE, le=MAX_EXIT_CODE)]
SignalName = Annotated[str, Field(max_length=MAX_SIGNAL_NAME)]
Reason = Annotated[str, Field(max_length=MAX_REASON)]
IsoTime = Annotated[str, Field(min_length=1, max_length=64)]
Percent = Annotated[float, number(ge=0, le=100 * 1024)]  # a run's CPU: 100 % per core
Mebibytes = Annotated[float, number(ge=0, le=MAX_DEVICE_MEMORY_MIB)]
RunStateName = Annotated[str, Field(max_length=32)]


def _flat_capabilities(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) > MAX_CAPABILITIES:
            raise rule_error("at most {n} entries", n=MAX_CAPABILITIES)
        for key, item in value.items():
            if not isinstance(key, str) or len(key) > 64:
                raise rule_error("names have at most 64 characters, got {key}", key=show(key))
            if not isinstance(item, bool | str) or (isinstance(item, str) and len(item) > 255):
                raise rule_error(
                    "`{key}` must be true, false or a short text, got {value}",
                    key=key,
                    value=show(item),
                )
    return value


Capabilities = Annotated[dict[str, bool | str], BeforeValidator(_flat_capabilities)]


class Device(StrictModel):
    """One GPU an agent found."""

    index: Annotated[int, whole(ge=0, le=MAX_DEVICE_INDEX)]
    uuid: Annotated[str, Field(max_length=128)] = ""
    model: Annotated[str, Field(max_length=64)] = ""
    memory_mib: Annotated[int, whole(ge=0, le=MAX_DEVICE_MEMORY_MIB)] = 0


Devices = Annotated[list[Device], Field(max_length=MAX_DEVICES)]


class NodeFactsIn(StrictModel):
    """What an agent says about its machine, at registration and in every hello."""

    model_config = StrictModel.model_config | {"extra": "ignore"}

    address: Annotated[str, Field(max_length=MAX_TEXT)] | None = None
    devices: Devices
    cpu: NodeCPU
    memory_gib: NodeMemory
    agent_version: Annotated[str, Field(max_length=32)]
    capabilities: Capabilities | None = None

    @model_validator(mode="after")
    def _distinct_indices(self) -> NodeFactsIn:
        seen: set[int] = set()
        for i, device in enumerate(self.devices):
            if device.index in seen:
                raise rule_error(
                    "GPU index {index} is listed twice", at=("devices", i), index=device.index
                )
            seen.add(device.index)
        return self


class ReportedRun(StrictModel):
    """A run the agent still has, as its hello lists it."""

    model_config = StrictModel.model_config | {"extra": "ignore"}

    run: RunId
    epoch: Epoch
    state: RunStateName | None = None
    exit_code: ExitCode | None = None
    signal: SignalName | None = None
    reason: Reason | None = None
    log_size: Annotated[int, whole(ge=0, le=MAX_LOG_OFFSET)] | None = None


class HelloIn(NodeFactsIn):
    """`hello`: the node's facts, its epoch counter and the runs it has."""

    node: Annotated[str, Field(max_length=63)]
    max_epoch: Epoch
    runs: Annotated[list[ReportedRun], Field(max_length=MAX_RUNS_IN_HELLO)]


PortNumber = Annotated[int, whole(ge=1, le=65535)]
RunPorts = Annotated[dict[PortName, PortNumber], Field(max_length=MAX_PORTS)]
"""Where a run's ports listen on its node: port name -> port number."""


class RunStateIn(StrictModel):
    """`run_state`: a run started (and, with declared ports, where they listen), exited or
    could not start."""

    model_config = StrictModel.model_config | {"extra": "ignore"}

    run: RunId
    epoch: Epoch
    state: RunStateName
    exit_code: ExitCode | None = None
    signal: SignalName | None = None
    reason: Reason | None = None
    at: IsoTime | None = None
    ports: RunPorts | None = None


class LogIn(StrictModel):
    """`log`: bytes of a run's output from `offset` (base64)."""

    model_config = StrictModel.model_config | {"extra": "ignore"}

    run: RunId
    offset: Annotated[int, whole(ge=0, le=MAX_LOG_OFFSET)]
    data: Annotated[str, Field(max_length=MAX_LOG_CHUNK_BASE64)]


class GpuUsage(StrictModel):
    """One GPU's utilisation and memory."""

    model_config = StrictModel.model_config | {"extra": "ignore"}

    index: Annotated[int, whole(ge=0, le=MAX_DEVICE_INDEX)]
    utilization: Annotated[float, number(ge=0, le=100)] = 0.0
    memory_used_mib: Mebibytes = 0.0
    memory_total_mib: Mebibytes = 0.0


class RunUsage(StrictModel):
    """One run's CPU and memory."""

    model_config = StrictModel.model_config | {"extra": "ignore"}

    run: RunId
    cpu_percent: Percent = 0.0
    rss_mib: Mebibytes = 0.0


class UsageIn(StrictModel):
    """`usage`: a sample of the node's GPUs and runs."""

    model_config = StrictModel.model_config | {"extra": "ignore"}

    at: IsoTime
    gpus: Annotated[list[GpuUsage], Field(max_length=MAX_DEVICES)]
    runs: Annotated[list[RunUsage], Field(max_length=MAX_RUNS_IN_USAGE)]


class ErrorIn(StrictModel):
    """`error`: the agent could not handle a frame of the server's."""

    model_config = StrictModel.model_config | {"extra": "ignore"}

    code: Annotated[str, Field(max_length=64)]
    message: Annotated[str, Field(max_length=MAX_REASON)]


BODIES: dict[str, type[StrictModel]] = {
    "hello": HelloIn,
    "run_state": RunStateIn,
    "log": LogIn,
    "usage": UsageIn,
    "error": ErrorIn,
}
"""The schema of each agent message with a body to check (heartbeat and ack have none)."""
