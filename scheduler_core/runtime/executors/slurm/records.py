"""What Slurm says, read into plain values: nodes (`sinfo --json`), jobs (`squeue
--json`), and the records of jobs that ended (`jobcomp/filetxt` lines, `sacct -P` rows).

Facts of Slurm 22.05 these rely on:
- `gres` / `gres_used` / `gres_detail` entries read `gpu[:TYPE]:COUNT[(IDX:0-1,3)]`; the
  indices are physical device indices, even where a device cgroup renumbers
  CUDA_VISIBLE_DEVICES inside the job.
- A node whose GPUs are one GRES type per index (`gpu:g0:1,gpu:g1:1,...`) can be asked for
  exact devices (`--gres=gpu:g3:1`): `pinnable`.
- `squeue --json`'s `exit_code` is the raw wait status (exit code << 8 | signal); `sacct
  --json` reports wrong exit codes in 22.05, so ended jobs are read from `sacct -P` or
  the job completion file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from scheduler_core.runtime.executors.slurm.hostlist import expand

# node states (sinfo --json `state`, lower case) and flags (`state_flags`, upper case)
UNUSABLE_STATES = frozenset({"down", "future", "unknown"})
UNUSABLE_FLAGS = frozenset(
    {"DRAIN", "DRAINING", "DRAINED", "NOT_RESPONDING", "FAIL", "MAINTENANCE", "POWERED_DOWN",
     "POWERING_DOWN", "REBOOT_REQUESTED", "REBOOT_ISSUED", "INVALID"}
)  # fmt: skip

# job states (squeue --json `job_state`)
PENDING_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"})
RUNNING_STATES = frozenset({"RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STOPPED",
                            "SIGNALING", "STAGE_OUT", "RESIZING"})  # fmt: skip
ENDED_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
                          "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"})  # fmt: skip

_TYPED_INDEX = re.compile(r"^g(\d+)$")
_IDX = re.compile(r"\(IDX:([^)]*)\)")


@dataclass(frozen=True, slots=True)
class Gres:
    """One GRES entry: `gpu:g3:1(IDX:3)` is name gpu, type g3, count 1, indices (3,)."""

    name: str
    type: str
    count: int
    indices: tuple[int, ...] = ()


def split_entries(text: str) -> list[str]:
    """Split a GRES string at commas outside parentheses."""
    entries: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text or "":
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            entries.append("".join(current))
            current = []
        else:
            current.append(char)
    if current:
        entries.append("".join(current))
    return [e.strip() for e in entries if e.strip() and e.strip() != "(null)"]


def parse_indices(text: str) -> tuple[int, ...]:
    """`0-2,5` -> (0, 1, 2, 5); `N/A` or '' -> ()."""
    found: list[int] = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part or part == "N/A":
            continue
        first, _, last = part.partition("-")
        found.extend(range(int(first), int(last or first) + 1))
    return tuple(found)


def parse_gres(text: str) -> list[Gres]:
    """The entries of a GRES string (`gpu:g0:1,gpu:g1:0(IDX:N/A)`, `gpu:a100:8(S:0-1)`)."""
    found = []
    for entry in split_entries(text):
        match = _IDX.search(entry)
        indices = parse_indices(match.group(1)) if match else ()
        bare = entry.split("(", 1)[0]
        parts = bare.split(":")
        name = parts[0]
        count_text = parts[-1] if len(parts) > 1 else "1"
        gtype = parts[1] if len(parts) > 2 else ""
        if not count_text.isdigit():  # `gpu:a100` (a type, no count) means one
            gtype, count_text = count_text, "1"
        found.append(Gres(name, gtype, int(count_text), indices))
    return found


def gpu_indices(entries: Iterable[Gres]) -> tuple[int, ...]:
    """The GPU indices of GRES entries: their `IDX`, else the index a `g<i>` type names."""
    indices: list[int] = []
    for entry in entries:
        if entry.name != "gpu":
            continue
        if entry.indices:
            indices.extend(entry.indices)
        elif entry.count and (match := _TYPED_INDEX.match(entry.type)):
            indices.append(int(match.group(1)))
    return tuple(sorted(set(indices)))


@dataclass(frozen=True, slots=True)
class SlurmNode:
    """A node of the partition as `sinfo --json` reports it."""

    name: str
    state: str
    flags: frozenset[str]
    reason: str
    address: str
    partitions: tuple[str, ...]
    cpus: int
    memory_mib: int
    gpus: int
    gpu_model: str
    pinnable: bool
    used_gpus: tuple[int, ...] = ()
    gpu_types: Mapping[int, str] = field(default_factory=dict)

    @property
    def usable(self) -> bool:
        """Whether Slurm would start new jobs on it (not down, drained, failing, ...)."""
        return self.state not in UNUSABLE_STATES and not (self.flags & UNUSABLE_FLAGS)

    @property
    def why_unusable(self) -> str:
        """Slurm's state and reason, in a few words, for a node that is not usable."""
        words = [self.state, *sorted(f.lower() for f in self.flags)]
        text = "+".join(words)
        return f"{text}: {self.reason}" if self.reason else text


def parse_node(raw: Mapping[str, Any]) -> SlurmNode:
    """One entry of `sinfo --json`'s `nodes`."""
    gres = [g for g in parse_gres(str(raw.get("gres") or "")) if g.name == "gpu"]
    typed = {int(m.group(1)): g.type for g in gres if (m := _TYPED_INDEX.match(g.type))}
    pinnable = bool(gres) and len(typed) == len(gres) and all(g.count == 1 for g in gres)
    models = sorted({g.type for g in gres if g.type and not _TYPED_INDEX.match(g.type)})
    return SlurmNode(
        name=str(raw["name"]),
        state=str(raw.get("state") or "unknown").lower(),
        flags=frozenset(str(f).upper() for f in raw.get("state_flags") or ()),
        reason=str(raw.get("reason") or ""),
        address=str(raw.get("address") or raw.get("hostname") or raw["name"]),
        partitions=tuple(str(p) for p in raw.get("partitions") or ()),
        cpus=int(raw.get("cpus") or 0),
        memory_mib=int(raw.get("real_memory") or 0),
        gpus=sum(g.count for g in gres),
        gpu_model=models[0] if models else "",
        pinnable=pinnable,
        used_gpus=gpu_indices(g for g in parse_gres(str(raw.get("gres_used") or "")) if g.count),
        gpu_types=typed,
    )


@dataclass(frozen=True, slots=True)
class SlurmJob:
    """A job (or one component of a heterogeneous job) as `squeue --json` reports it.
    `gpus_by_node` maps each of its nodes to the GPU indices Slurm gave it there."""

    job_id: int
    name: str
    comment: str
    state: str
    reason: str
    partition: str
    nodes: tuple[str, ...]
    gpus_by_node: Mapping[str, tuple[int, ...]]
    exit_code: int | None
    signal: int | None
    restarts: int
    het_job_id: int = 0
    het_job_offset: int = 0
    started_at: datetime | None = None
    ended_at: datetime | None = None
    stdout: str = ""
    required_nodes: tuple[str, ...] = ()
    asked: tuple[Gres, ...] = ()  # the GPUs it asks per node (`tres_per_node`)

    @property
    def root_id(self) -> int:
        """The id the whole job is known by (a heterogeneous job's first component)."""
        return self.het_job_id or self.job_id

    @property
    def pending(self) -> bool:
        return self.state in PENDING_STATES

    @property
    def running(self) -> bool:
        return self.state in RUNNING_STATES

    @property
    def ended(self) -> bool:
        return self.state in ENDED_STATES

    @property
    def held(self) -> bool:
        """Pending because it was submitted held (waiting for its release)."""
        return self.pending and self.reason in ("JobHeldUser", "JobHeldAdmin")

    @property
    def pinned_gpus(self) -> tuple[int, ...]:
        """The exact GPU indices it asks on each node (`gpu:g3:1`), if it asks exact ones."""
        return gpu_indices(self.asked)

    @property
    def gpus_per_node(self) -> int:
        return sum(g.count for g in self.asked)


def _time(value: Any) -> datetime | None:
    seconds = int(value or 0)
    return datetime.fromtimestamp(seconds, tz=UTC) if seconds > 0 else None


def wait_status(raw: Any) -> tuple[int | None, int | None]:
    """(exit code, signal) of a raw wait status; (None, None) when there is none."""
    if raw is None or raw == "":
        return None, None
    status = int(raw)
    return (status >> 8) & 0xFF, (status & 0x7F) or None


def parse_job(raw: Mapping[str, Any]) -> SlurmJob:
    """One entry of `squeue --json`'s `jobs`."""
    nodes = tuple(expand(str(raw.get("nodes") or "")))
    details = [gpu_indices(parse_gres(str(d))) for d in raw.get("gres_detail") or ()]
    state = str(raw.get("job_state") or "UNKNOWN").upper()
    code, signal = wait_status(raw.get("exit_code")) if state in ENDED_STATES else (None, None)
    return SlurmJob(
        job_id=int(raw["job_id"]),
        name=str(raw.get("name") or ""),
        comment=str(raw.get("comment") or ""),
        state=state,
        reason=str(raw.get("state_reason") or ""),
        partition=str(raw.get("partition") or ""),
        nodes=nodes,
        gpus_by_node=dict(zip(nodes, details, strict=False)),
        exit_code=code,
        signal=signal,
        restarts=int(raw.get("restart_cnt") or 0),
        het_job_id=int(raw.get("het_job_id") or 0),
        het_job_offset=int(raw.get("het_job_offset") or 0),
        started_at=_time(raw.get("start_time")),
        ended_at=_time(raw.get("end_time")),
        stdout=str(raw.get("standard_output") or ""),
        required_nodes=tuple(expand(str(raw.get("required_nodes") or ""))),
        asked=tuple(
            g
            for g in parse_gres(str(raw.get("tres_per_node") or "").replace("gres:", ""))
            if g.name == "gpu"
        ),
    )


@dataclass(frozen=True, slots=True)
class JobEnd:
    """The record of a job that ended: from the job completion file or `sacct -P`."""

    job_id: int
    name: str
    state: str
    exit_code: int | None
    signal: int | None
    nodes: tuple[str, ...]
    ended_at: datetime | None
    het_job_id: int = 0


_KEY_VALUE = re.compile(r"(\w+)=(\S*)")


def _exit_pair(text: str) -> tuple[int | None, int | None]:
    """`3:0` (code:signal, as sacct and jobcomp write it) -> (3, None)."""
    code, _, signal = (text or "").partition(":")
    if not code.strip().isdigit():
        return None, None
    return int(code), (int(signal) if signal.strip().isdigit() and int(signal) else None)


def _local_time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text).astimezone(UTC)
    except ValueError:
        return None


def parse_jobcomp_line(line: str) -> JobEnd | None:
    """One line of a `jobcomp/filetxt` file; None for a line that is not a record (or the
    line Slurm writes when a job is re-queued, with state PENDING)."""
    fields = dict(_KEY_VALUE.findall(line))
    if "JobId" not in fields or not fields["JobId"].isdigit():
        return None
    state = fields.get("JobState", "").upper()
    if state not in ENDED_STATES:
        return None
    code, signal = _exit_pair(fields.get("ExitCode", ""))
    return JobEnd(
        job_id=int(fields["JobId"]),
        name=fields.get("Name", ""),
        state=state,
        exit_code=code,
        signal=signal,
        nodes=tuple(expand(fields.get("NodeList", ""))),
        ended_at=_local_time(fields.get("EndTime", "")),
        het_job_id=int(fields.get("HetJobId") or 0),
    )


SACCT_FORMAT = "JobIDRaw,JobName,State,ExitCode,NodeList,End"


def parse_sacct_line(line: str) -> JobEnd | None:
    """One `sacct -P -n -X --format=SACCT_FORMAT` row; None for steps, unfinished jobs
    or a row that does not read."""
    parts = line.rstrip("\n").split("|")
    if len(parts) < 6 or not parts[0].isdigit():
        return None
    state = parts[2].split(" ", 1)[0].upper()  # `CANCELLED by 0`
    if state not in ENDED_STATES:
        return None
    code, signal = _exit_pair(parts[3])
    return JobEnd(
        job_id=int(parts[0]),
        name=parts[1],
        state=state,
        exit_code=code,
        signal=signal,
        nodes=tuple(expand(parts[4])),
        ended_at=_local_time(parts[5]),
    )
