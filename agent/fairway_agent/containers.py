"""Container runtimes: which one this node has, and the command that runs a pod's image with
exactly its GPUs."""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence

RUNTIMES = ("docker", "podman")
Which = Callable[[str], str | None]
Works = Callable[[str], bool]

logger = logging.getLogger(__name__)


def answers(path: str) -> bool:
    """Whether the runtime at `path` can run containers now (`info` succeeds: a docker
    client without a reachable daemon cannot)."""
    try:
        done = subprocess.run([path, "info"], capture_output=True, timeout=15, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def find_runtime(which: Which = shutil.which, works: Works = answers) -> str | None:
    """Path of a docker or podman that works (docker first), or None."""
    for name in RUNTIMES:
        path = which(name)
        if not path:
            continue
        if works(path):
            return path
        logger.warning("%s is installed but does not answer (`%s info` failed): "
                       "pods with an image cannot run here", name, path)  # fmt: skip
    return None


def container_name(run: str) -> str:
    return f"fairway-run-{run}"


def container_argv(
    *,
    runtime: str,
    run: str,
    image: str,
    command: Sequence[str] | None,
    env: Mapping[str, str],
    gpus: Sequence[int],
    mounts: Sequence[str],
    workdir: str | None,
    user: str | None,
    ports: Sequence[int] = (),
) -> list[str]:
    """`docker run` (or podman) with the pod's GPUs, env (passed by name, so values never
    appear in a process list), the run and checkpoint directories mounted at the same paths,
    and its ports published at the same numbers."""
    argv = [runtime, "run", "--rm", "--init", "--name", container_name(run)]
    if gpus:
        if runtime.endswith("podman"):
            for index in gpus:
                argv += ["--device", f"nvidia.com/gpu={index}"]
        else:
            argv += ["--gpus", f'"device={",".join(str(i) for i in gpus)}"']
    for name in sorted(env):
        argv += ["-e", name]
    for path in mounts:
        argv += ["-v", f"{path}:{path}"]
    for port in ports:
        argv += ["-p", f"{port}:{port}"]
    if workdir:
        argv += ["-w", workdir]
    if user:
        argv += ["--user", user]
    argv.append(image)
    argv += list(command or [])
    return argv


def kill_argv(runtime: str, run: str) -> list[str]:
    return [runtime, "kill", container_name(run)]
