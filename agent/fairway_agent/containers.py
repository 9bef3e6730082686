"""Container runtimes: which one this node has, and the command that runs a pod's image with
exactly its GPUs."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Mapping, Sequence

RUNTIMES = ("docker", "podman")
Which = Callable[[str], str | None]


def find_runtime(which: Which = shutil.which) -> str | None:
    """Path of docker or podman (docker first), or None."""
    for name in RUNTIMES:
        path = which(name)
        if path:
            return path
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
) -> list[str]:
    """`docker run` (or podman) with the pod's GPUs, env (passed by name, so values never
    appear in a process list), the run and checkpoint directories mounted at the same paths."""
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
    if workdir:
        argv += ["-w", workdir]
    if user:
        argv += ["--user", user]
    argv.append(image)
    argv += list(command or [])
    return argv


def kill_argv(runtime: str, run: str) -> list[str]:
    return [runtime, "kill", container_name(run)]
