"""The Slurm commands Fairway runs, as one small client: read nodes and jobs in bulk
(`sinfo --json`, `squeue --json`), submit held jobs (`sbatch --hold`), release them
(`scontrol release`), signal and cancel them (`scancel`), and read the records of jobs
that ended (`sacct -P` with accounting, else the `jobcomp/filetxt` file).

Every command runs with a time limit; an answer that says the controller cannot be
reached raises SlurmUnavailable (squeue and sinfo then still exit 0 with an `errors`
list and no jobs: that is never read as "no jobs"), a request Slurm refuses raises
SlurmRejected with Slurm's own message. No Django here: the benchmark uses it too.

A job gets the environment `sbatch` runs with (`--export=ALL`, launch.py), and Fairway
runs `sbatch` with nothing of its own in it: PATH (JOB_PATH) and SLURM_CONF. Any other
`--export` (NIL, NONE, a list of names) has Slurm load the user's environment when the
job launches, which took 0.2-1.3 s per job on the benchmark's cluster against 0.03 s.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scheduler_core.runtime.executors.slurm.errors import (
    SlurmError,
    SlurmOutputError,
    SlurmRejected,
    SlurmUnavailable,
)
from scheduler_core.runtime.executors.slurm.records import (
    SACCT_FORMAT,
    JobEnd,
    SlurmJob,
    SlurmNode,
    parse_job,
    parse_jobcomp_line,
    parse_node,
    parse_sacct_line,
)

# PATH of every job (and of the `sbatch` that submits it): the system's, never Fairway's
JOB_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

UNREACHABLE_WORDS = (
    "unable to contact slurm controller",
    "connect failure",
    "connection refused",
    "socket timed out",
    "zero bytes were transmitted",
    "slurm_load_jobs",
    "slurm_load_node",
    "unspecified error",
    "communication connection failure",
    "slurmctld not responding",
)
# answers that mean the job is gone already: cancelling or signalling it again is done
GONE_WORDS = ("invalid job id specified", "job has already finished", "already completing")


def _unreachable(text: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in UNREACHABLE_WORDS)


@dataclass(frozen=True, slots=True)
class JobRequest:
    """A batch job to submit: `sbatch` options (`components` > 1: a heterogeneous job,
    one option list per component), the script, and where its output goes."""

    components: Sequence[Sequence[str]]
    script: str
    workdir: str


class SlurmClient:
    """Runs Slurm's commands against the cluster `conf` names (SLURM_CONF; None: the
    machine's default), each stopped after `timeout` seconds."""

    def __init__(self, *, conf: str | None = None, timeout: float = 20.0) -> None:
        self.conf = conf or None
        self.timeout = timeout

    # -- running commands ---------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.conf:
            env["SLURM_CONF"] = self.conf
        return env

    def _job_env(self) -> dict[str, str]:
        """What `sbatch` runs with, so what a job gets (module docstring)."""
        conf = self.conf or os.environ.get("SLURM_CONF", "")
        return {"PATH": JOB_PATH, **({"SLURM_CONF": conf} if conf else {})}

    def run(
        self, argv: Sequence[str], *, stdin: str | None = None, env: Mapping[str, str] | None = None
    ) -> str:
        """Stdout of a Slurm command (run with `env`, else this process's environment);
        SlurmUnavailable / SlurmRejected when it fails."""
        command = " ".join(argv)
        try:
            done = subprocess.run(
                list(argv), input=stdin, capture_output=True, text=True,
                env=dict(env) if env is not None else self._env(), timeout=self.timeout,
                check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise SlurmUnavailable(
                f"{argv[0]} did not answer within {self.timeout:g} s", command=command
            ) from None
        except FileNotFoundError:
            raise SlurmUnavailable(
                f"{argv[0]} is not installed on this machine (Slurm's client commands are "
                "needed: apt-get install slurm-client)",
                command=command,
            ) from None
        if done.returncode == 0:
            return done.stdout
        message = (done.stderr or done.stdout).strip() or f"{argv[0]} exited {done.returncode}"
        if _unreachable(message):
            raise SlurmUnavailable(message, command=command)
        raise SlurmRejected(message, command=command)

    def _json(self, argv: Sequence[str], key: str) -> list[dict[str, Any]]:
        text = self.run(argv)
        try:
            document = json.loads(text)
        except json.JSONDecodeError:
            raise SlurmOutputError(
                f"{argv[0]} --json did not answer JSON", command=" ".join(argv)
            ) from None
        errors = document.get("errors") or []
        if errors:
            # 22.05 answers exit 0, no items and an `errors` list when ctld is away
            words = (
                "; ".join(str(e.get("description") or e.get("error") or e) for e in errors)
                or "unknown error"
            )
            raise SlurmUnavailable(f"{argv[0]}: {words}", command=" ".join(argv))
        items = document.get(key)
        if not isinstance(items, list):
            raise SlurmOutputError(f"{argv[0]} --json has no {key}", command=" ".join(argv))
        return items

    # -- reading --------------------------------------------------------------------

    def ping(self) -> bool:
        """Whether the controller answers."""
        try:
            return "is UP" in self.run(["scontrol", "ping"])
        except SlurmError:
            return False

    def nodes(self, partition: str | None = None) -> list[SlurmNode]:
        """The nodes (of `partition`), as sinfo reports them."""
        nodes = [parse_node(raw) for raw in self._json(["sinfo", "--json"], "nodes")]
        return [n for n in nodes if partition is None or partition in n.partitions]

    def jobs(self) -> list[SlurmJob]:
        """Every job the controller knows (pending, running, and ended within MinJobAge)."""
        return [parse_job(raw) for raw in self._json(["squeue", "--json"], "jobs")]

    def config(self) -> dict[str, str]:
        """`scontrol show config` as a dict."""
        values = {}
        for line in self.run(["scontrol", "show", "config"]).splitlines():
            key, sep, value = line.partition("=")
            if sep:
                values[key.strip()] = value.strip()
        return values

    def partition_exists(self, partition: str) -> bool:
        try:
            self.run(["scontrol", "show", "partition", partition])
        except SlurmRejected:
            return False
        return True

    def ended_jobs(
        self, job_ids: Iterable[int], *, jobcomp_file: str | None = None
    ) -> dict[int, JobEnd]:
        """The end records of `job_ids` that ended: `sacct -P` where accounting runs,
        else the job completion file (`jobcomp_file`, when this machine can read it)."""
        ids = sorted(set(job_ids))
        if not ids:
            return {}
        try:
            text = self.run(
                ["sacct", "-P", "-n", "-X", "--format", SACCT_FORMAT,
                 "-j", ",".join(str(i) for i in ids)]
            )  # fmt: skip
        except SlurmRejected:  # no accounting: sacct says "accounting storage is disabled"
            return read_jobcomp(jobcomp_file, ids) if jobcomp_file else {}
        records = [r for r in map(parse_sacct_line, text.splitlines()) if r is not None]
        return {r.job_id: r for r in records if r.job_id in ids}

    # -- acting -----------------------------------------------------------------------

    def submit(self, request: JobRequest, *, hold: bool = True) -> int:
        """Submit `request` (held unless `hold` is False); its job id."""
        # found on this process's PATH, run with the job's (module docstring)
        argv = [shutil.which("sbatch") or "sbatch", "--parsable"]
        if hold:
            argv.append("--hold")
        argv += ["--chdir", request.workdir]
        for index, options in enumerate(request.components):
            if index:
                argv.append(":")
            argv += list(options)
        out = self.run(argv, stdin=request.script, env=self._job_env()).strip()
        first = out.split(";", 1)[0]
        if not first.isdigit():
            raise SlurmOutputError(f"sbatch answered {out!r}, not a job id", command="sbatch")
        return int(first)

    def release(self, job_ids: Iterable[int]) -> None:
        """Let held jobs start (at the controller's next scheduling pass)."""
        ids = ",".join(str(i) for i in sorted(set(job_ids)))
        if ids:
            self.run(["scontrol", "release", ids])

    def start_now(self, job_id: int) -> None:
        """Clear a re-queued job's begin time (otherwise it waits cred_expire)."""
        self.run(["scontrol", "update", f"jobid={job_id}", "StartTime=now"])

    def signal(self, job_id: int, signal: str, *, batch: bool = True) -> None:
        """Send `signal` to the job's processes: its batch shell and steps (`batch`), or
        only its steps (the tasks of an `srun`, which itself would end the step at once
        on SIGTERM, before the tasks' own handlers run)."""
        scope = ["--full"] if batch else []
        self._gone_is_done(["scancel", *scope, f"--signal={signal}", str(job_id)])

    def cancel(self, job_ids: Iterable[int]) -> None:
        """End jobs: SIGTERM, then SIGKILL after KillWait; a job already gone is fine."""
        ids = [str(i) for i in sorted(set(job_ids))]
        if ids:
            self._gone_is_done(["scancel", *ids])

    def _gone_is_done(self, argv: list[str]) -> None:
        try:
            self.run(argv)
        except SlurmRejected as exc:
            if not any(word in exc.message.lower() for word in GONE_WORDS):
                raise


def read_jobcomp(path: str, job_ids: Iterable[int]) -> dict[int, JobEnd]:
    """The last record of each of `job_ids` in a `jobcomp/filetxt` file (a job re-queued
    and ended twice has two; the later counts). A file that cannot be read gives none."""
    wanted = set(job_ids)
    found: dict[int, JobEnd] = {}
    try:
        with Path(path).open(errors="replace") as handle:
            for line in handle:
                record = parse_jobcomp_line(line)
                if record is not None and record.job_id in wanted:
                    found[record.job_id] = record
    except OSError:
        return {}
    return found
