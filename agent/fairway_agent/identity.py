"""Which user a pod runs as (docs/agent.md "Running a pod").

- An agent that is not root runs pods as itself (`--run-as` may only name that user).
- A root agent runs pods as `--run-as USER`, as `nobody` when none is given, and as root
  only with `--allow-root`.
"""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass
from typing import Any


class IdentityError(ValueError):
    """The configured user cannot be used; the message says why."""


@dataclass(frozen=True)
class RunAs:
    """A user pods run as."""

    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: str

    @property
    def is_root(self) -> bool:
        return self.uid == 0

    def as_spec(self) -> dict[str, Any]:
        return {"name": self.name, "uid": self.uid, "gid": self.gid, "groups": list(self.groups)}


def _lookup(name: str) -> RunAs:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise IdentityError(f"--run-as: no such user on this node: {name}") from None
    groups = tuple(os.getgrouplist(entry.pw_name, entry.pw_gid))
    return RunAs(entry.pw_name, entry.pw_uid, entry.pw_gid, groups, entry.pw_dir)


def resolve_run_as(run_as: str | None, *, allow_root: bool, euid: int | None = None) -> RunAs:
    """The user pods run as, from the flags and who the agent is."""
    euid = os.geteuid() if euid is None else euid
    if euid != 0:
        me = _lookup(pwd.getpwuid(euid).pw_name)
        if run_as is not None and run_as not in (me.name, str(me.uid)):
            raise IdentityError(
                f"--run-as {run_as} needs the agent to run as root (it runs as {me.name})"
            )
        return me
    if run_as is None:
        return _lookup("root") if allow_root else _lookup("nobody")
    user = _lookup(run_as)
    if user.is_root and not allow_root:
        raise IdentityError("refusing to run pods as root; pass --allow-root if you mean it")
    return user
