"""The runs of this node: start them from `start` messages (each under a shim), stop them,
watch their state, and adopt them again after an agent restart (docs/agent.md).

Every run lives in `<state dir>/runs/<run>/` (see rundir.py); the highest epoch this node
has seen is kept in `<state dir>/epoch.json`, so a late or repeated `start` never runs a
command twice, even across restarts.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fairway_agent import containers, ports, protocol
from fairway_agent.discovery import Device
from fairway_agent.identity import RunAs
from fairway_agent.procgroup import is_same_process, signal_group
from fairway_agent.rundir import RunDir, read_json, write_json
from fairway_agent.spawner import ShimSpawner
from fairway_agent.wake import WakePipe

log = logging.getLogger(__name__)

TERMINAL_STATES = frozenset({protocol.RUN_EXITED, protocol.RUN_START_FAILED})
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.@-]+$")
# What a pod inherits from the agent's environment; everything else comes from the start
# message, so no agent secret (the join token) leaks into a pod.
INHERITED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


@dataclass
class RunStatus:
    """Where one run stands, as `run_state` reports it."""

    run: Any  # the id as the server sent it
    epoch: int
    state: str
    exit_code: int | None = None
    signal: str | None = None
    reason: str | None = None
    at: str = field(default_factory=lambda: iso(time.time()))
    ports: dict[str, int] | None = None  # where its ports listen (its `running` state)
    stale: bool = False  # a refused late start, not a state of the run (ERR_STALE_START)

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    def message(self) -> dict[str, Any]:
        """The body of a `run_state` message."""
        return {
            "run": self.run,
            "epoch": self.epoch,
            "state": self.state,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "reason": self.reason,
            "at": self.at,
        } | ({"ports": self.ports} if self.ports else {})


@dataclass
class Run:
    """A run this agent knows: its directory, its shim and its latest status."""

    key: str
    dir: RunDir
    status: RunStatus
    shim_pid: int | None = None
    shim_create_time: float | None = None
    ports: dict[str, int] = field(default_factory=dict)  # port name -> port on this node

    def shim_alive(self) -> bool:
        # Shims are children of the fork server, which lets the kernel reap them: a dead
        # one never lingers as a zombie that looks alive.
        if self.shim_pid is None or self.shim_create_time is None:
            return False
        return is_same_process(self.shim_pid, self.shim_create_time)


def _safe_relative(key: str) -> str | None:
    parts = key.split("/")
    if any(not part or part in (".", "..") or not _SAFE_NAME.match(part) for part in parts):
        return None
    return "/".join(parts)


class RunManager:
    """Starts, stops, watches and re-adopts this node's runs."""

    def __init__(
        self,
        state_dir: Path,
        *,
        node_name: str,
        run_as: RunAs,
        devices: list[Device],
        checkpoint_root: Path | None = None,
        which: containers.Which = shutil.which,
        python: str = sys.executable,
        spawner: ShimSpawner | None = None,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.runs_dir = self.state_dir / "runs"
        self.lease_file = self.state_dir / "lease"
        self.checkpoint_root = Path(checkpoint_root or self.state_dir / "checkpoints")
        self.node_name = node_name
        self.run_as = run_as
        self.device_indices = {int(d["index"]) for d in devices}
        self.runtime = containers.find_runtime(which)
        self.spawner = spawner or ShimSpawner(python)
        self.fence_after: float | None = None
        self.runs: dict[str, Run] = {}
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.wake = WakePipe(self.state_dir / "wake")
        # Pods running as another user must reach their run's work/ directory by name.
        os.chmod(self.state_dir, 0o711)
        os.chmod(self.runs_dir, 0o711)
        self.max_epoch = int((read_json(self.state_dir / "epoch.json") or {}).get("epoch", 0))
        self._reattach()

    @property
    def capabilities(self) -> dict[str, Any]:
        return {"containers": self.runtime is not None}

    # ---- starting -------------------------------------------------------------------

    def start(self, msg: dict[str, Any]) -> RunStatus:
        """Start the run of a `start` message, unless its epoch is not above every epoch
        seen (then: the run's current state; a run never starts twice)."""
        key, epoch = str(msg["run"]), int(msg["epoch"])
        existing = self.runs.get(key)
        if existing is not None:
            return self._sent_again(existing, epoch)
        if epoch <= self.max_epoch:
            return RunStatus(
                msg["run"],
                epoch,
                protocol.RUN_START_FAILED,
                reason=f"stale start: epoch {epoch} is not above {self.max_epoch}, "
                "the highest this node has seen",
                stale=True,
            )
        self._save_epoch(epoch)
        name = _safe_relative(key)
        if name is None or "/" in name:
            return RunStatus(msg["run"], epoch, protocol.RUN_START_FAILED, reason="bad run id")
        run_dir = RunDir(self.runs_dir / name)
        run_dir.path.mkdir(mode=0o711)
        run = Run(key, run_dir, RunStatus(msg["run"], epoch, protocol.RUN_STARTING))
        self.runs[key] = run
        meta = {"run": msg["run"], "epoch": epoch, "workload": msg.get("workload")}
        write_json(run_dir.meta, meta)
        try:
            spec = self._spec(key, run_dir, msg)
        except StartError as exc:
            return self._fail(run, meta, str(exc))
        meta["ports"] = run.ports
        write_json(run_dir.spec, spec, mode=0o600)
        try:
            run.shim_pid, run.shim_create_time = self.spawner.spawn(run_dir)
        except OSError as exc:
            return self._fail(run, meta, f"could not start the run's shim: {exc}")
        meta |= {"shim_pid": run.shim_pid, "shim_create_time": run.shim_create_time}
        write_json(run_dir.meta, meta)
        log.info("run %s (epoch %s) starting: %s", key, epoch, spec["argv"])
        return run.status

    def _sent_again(self, run: Run, epoch: int) -> RunStatus:
        """A start of a run this node has: nothing starts again. The server sends a start
        it heard nothing of again with a new epoch; the run takes it, so its reports
        count (the server ignores those of an epoch it replaced)."""
        if epoch > run.status.epoch:
            if epoch > self.max_epoch:
                self._save_epoch(epoch)
            run.status.epoch = epoch
            meta = read_json(run.dir.meta) or {"run": run.status.run}
            write_json(run.dir.meta, meta | {"epoch": epoch})
        return run.status

    def close(self) -> None:
        """Stop the fork server and close the wake pipe (the runs keep running)."""
        self.spawner.close()
        self.wake.close()

    def _save_epoch(self, epoch: int) -> None:
        # The one file that must survive a power loss: it keeps a late start out.
        self.max_epoch = epoch
        write_json(self.state_dir / "epoch.json", {"epoch": epoch}, durable=True)

    def _fail(self, run: Run, meta: dict[str, Any], reason: str) -> RunStatus:
        log.warning("run %s could not start: %s", run.key, reason)
        record = {"exit_code": None, "signal": None, "start_failed": True, "reason": reason}
        write_json(run.dir.exit, record | {"at": time.time()})
        run.status = RunStatus(run.status.run, run.status.epoch, protocol.RUN_START_FAILED)
        run.status.reason = reason
        return run.status

    def _own(self, path: Path) -> None:
        if os.geteuid() == 0 and self.run_as.uid != 0:
            os.chown(path, self.run_as.uid, self.run_as.gid)

    def _spec(self, key: str, run_dir: RunDir, msg: dict[str, Any]) -> dict[str, Any]:
        gpus = [int(i) for i in msg.get("gpus") or []]
        missing = sorted(set(gpus) - self.device_indices)
        if missing:
            raise StartError(f"GPU {', '.join(map(str, missing))} is not on node {self.node_name}")
        checkpoint_key = _safe_relative(str(msg.get("checkpoint_key") or key))
        if checkpoint_key is None:
            raise StartError(f"bad checkpoint key: {msg.get('checkpoint_key')!r}")
        run_dir.work.mkdir(mode=0o700)
        self._own(run_dir.work)
        checkpoint_dir = self.checkpoint_root / checkpoint_key
        checkpoint_dir.mkdir(parents=True, exist_ok=True, mode=0o755)
        self._own(checkpoint_dir)
        run_ports = self._ports(key, msg)
        pod_env = _pod_env(msg, gpus, run_dir, checkpoint_dir) | ports.environment(run_ports)
        base_env = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}
        base_env.setdefault("PATH", DEFAULT_PATH)
        base_env |= {"HOME": self.run_as.home, "USER": self.run_as.name}
        base_env["LOGNAME"] = self.run_as.name
        command = self._command(msg)
        spec: dict[str, Any] = {
            "run": msg["run"],
            "argv": command,
            "env": base_env | pod_env,
            "cwd": msg.get("workdir") or str(run_dir.work),
            "user": self.run_as.as_spec(),
            "lease_file": str(self.lease_file),
            "wake_file": str(self.wake.path),
            "fence_after": self.fence_after,
            "grace_period": float(msg.get("grace_period", 30)),
            "kill_argv": None,
        }
        image = msg.get("image")
        if image:
            if self.runtime is None:
                raise StartError(
                    f"no container runtime (docker or podman) on node {self.node_name}"
                )
            # The runtime renumbers the GPUs it hands over and sets the device variables.
            for name in ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"):
                pod_env.pop(name)
                spec["env"].pop(name)
            spec["argv"] = containers.container_argv(
                runtime=self.runtime,
                run=key,
                image=str(image),
                command=command or None,
                env=pod_env,
                gpus=gpus,
                mounts=[str(run_dir.work), str(checkpoint_dir), str(run_dir.path)],
                workdir=msg.get("workdir"),
                user=f"{self.run_as.uid}:{self.run_as.gid}",
                ports=list(run_ports.values()),
            )
            spec["cwd"] = str(run_dir.path)
            spec["user"] = None  # the runtime's client runs as the agent; --user inside
            spec["kill_argv"] = containers.kill_argv(self.runtime, key)
        elif not command:
            raise StartError("the start message has no command (argv or shell)")
        return spec

    def _ports(self, key: str, msg: dict[str, Any]) -> dict[str, int]:
        """Free ports for the ports the start names, kept with the run (its meta.json)."""
        taken = {p for run in self.runs.values() if not run.status.terminal
                 for p in run.ports.values()}  # fmt: skip
        try:
            chosen = ports.pick(ports.names(msg.get("ports")), taken)
        except ports.PortError as exc:
            raise StartError(str(exc)) from None
        self.runs[key].ports = chosen
        return chosen

    @staticmethod
    def _command(msg: dict[str, Any]) -> list[str]:
        if msg.get("argv"):
            return [str(a) for a in msg["argv"]]
        if msg.get("shell"):
            return ["/bin/sh", "-c", str(msg["shell"])]
        return []

    # ---- stopping -------------------------------------------------------------------

    def signal(self, run: Any, *, reason: str, grace_period: float) -> RunStatus | None:
        """Stop a run: the stop file, SIGTERM to its group, SIGKILL after the grace period
        (the shim enforces it, even if this agent restarts). None for an unknown run."""
        found = self.runs.get(str(run))
        if found is None:
            return None
        if found.status.terminal or found.dir.signal.exists():
            return found.status
        log.info("stopping run %s (%s, grace %ss)", found.key, reason, grace_period)
        request = {"reason": reason, "grace_period": float(grace_period), "at": time.time()}
        write_json(found.dir.signal, request)
        found.dir.stop.touch()
        if found.shim_pid is not None and found.shim_alive():
            signal_group(found.shim_pid, signal.SIGTERM)
        return found.status

    def stop_all_except(self, keep: Iterable[Any], *, reason: str = protocol.STOP_LOST) -> None:
        """Stop every live run the server does not want kept (welcome's `keep`)."""
        wanted = {str(k) for k in keep}
        for key, run in list(self.runs.items()):
            if key not in wanted and not run.status.terminal:
                grace = float((read_json(run.dir.spec) or {}).get("grace_period", 30))
                self.signal(key, reason=reason, grace_period=grace)

    # ---- watching -------------------------------------------------------------------

    def poll(self) -> list[RunStatus]:
        """Look at every live run; the state changes since the last poll, in order."""
        changes: list[RunStatus] = []
        for run in self.runs.values():
            if run.status.terminal:
                continue
            alive = run.shim_alive()
            record = read_json(run.dir.exit)
            if run.status.state == protocol.RUN_STARTING and run.dir.started.exists():
                run.status = RunStatus(
                    run.status.run, run.status.epoch, protocol.RUN_RUNNING, ports=run.ports
                )
                changes.append(run.status)
            if record is None and not alive:
                record = read_json(run.dir.exit) or {
                    "exit_code": None,
                    "signal": None,
                    "reason": "the run's shim died without recording an exit status",
                }
            if record is not None:
                run.status = _status_from_exit(run.status, record)
                changes.append(run.status)
                log.info("run %s ended: %s", run.key, run.status.message())
        return changes

    def statuses(self) -> list[RunStatus]:
        return [run.status for run in self.runs.values()]

    def run_id(self, run: Any) -> Any:
        """The run's id as the server sent it."""
        found = self.runs.get(str(run))
        return found.status.run if found else run

    def has_started(self, run: Any) -> bool:
        """Whether the run's command was started (it may have ended since)."""
        found = self.runs.get(str(run))
        return found is not None and found.dir.started.exists()

    def live_groups(self) -> dict[Any, int]:
        """Process group id of every live run, by run id."""
        return {
            run.status.run: run.shim_pid
            for run in self.runs.values()
            if not run.status.terminal and run.shim_pid is not None
        }

    def log_size(self, run: Any) -> int:
        found = self.runs.get(str(run))
        return found.dir.log_size() if found else 0

    def read_log(self, run: Any, offset: int, limit: int) -> bytes:
        found = self.runs.get(str(run))
        if found is None:
            return b""
        try:
            with open(found.dir.output, "rb") as f:
                f.seek(offset)
                return f.read(limit)
        except FileNotFoundError:
            return b""

    def forget(self, run: Any) -> None:
        """Drop an ended run the server has fully received (state and logs)."""
        found = self.runs.get(str(run))
        if found is not None and found.status.terminal:
            del self.runs[found.key]
            shutil.rmtree(found.dir.path, ignore_errors=True)

    # ---- after a restart ------------------------------------------------------------

    def _reattach(self) -> None:
        for path in sorted(self.runs_dir.iterdir()):
            run_dir = RunDir(path)
            meta = read_json(run_dir.meta)
            if meta is None:
                log.warning("ignoring %s: no readable meta.json", path)
                continue
            key, epoch = str(meta["run"]), int(meta["epoch"])
            self.max_epoch = max(self.max_epoch, epoch)
            run = Run(
                key,
                run_dir,
                RunStatus(meta["run"], epoch, protocol.RUN_STARTING),
                shim_pid=meta.get("shim_pid"),
                shim_create_time=meta.get("shim_create_time"),
                ports={str(k): int(v) for k, v in (meta.get("ports") or {}).items()},
            )
            record = read_json(run_dir.exit)
            if record is not None:
                run.status = _status_from_exit(run.status, record)
            elif run_dir.started.exists():
                run.status.state = protocol.RUN_RUNNING
                run.status.ports = run.ports
            self.runs[key] = run
            log.info("adopted run %s (epoch %s): %s", key, epoch, run.status.state)
        self.poll()


def _pod_env(
    msg: dict[str, Any], gpus: list[int], run_dir: RunDir, checkpoint_dir: Path
) -> dict[str, str]:
    """What the server sent (`env`) and what the node adds: the pod's devices and files."""
    devices = ",".join(str(i) for i in gpus)
    return {str(k): str(v) for k, v in (msg.get("env") or {}).items()} | {
        "CUDA_VISIBLE_DEVICES": devices,
        "NVIDIA_VISIBLE_DEVICES": devices,
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
        "FAIRWAY_GPU_FRACTION": str(msg.get("gpu_fraction", 1)),
        "FAIRWAY_RUN_DIR": str(run_dir.work),
        "FAIRWAY_STOP_FILE": str(run_dir.stop),
        "FAIRWAY_CHECKPOINT_DIR": str(checkpoint_dir),
    }


class StartError(Exception):
    """A run that cannot start; the message is the reason the user sees."""


def _status_from_exit(current: RunStatus, record: dict[str, Any]) -> RunStatus:
    state = protocol.RUN_START_FAILED if record.get("start_failed") else protocol.RUN_EXITED
    reason = record.get("reason")
    if record.get("fenced") and not reason:
        reason = "stopped on the node: the agent lost the server (fenced)"
    return RunStatus(
        current.run,
        current.epoch,
        state,
        exit_code=record.get("exit_code"),
        signal=record.get("signal"),
        reason=reason,
        at=iso(float(record.get("at") or time.time())),
    )
