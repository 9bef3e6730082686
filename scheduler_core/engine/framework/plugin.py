"""The plugin interface and registry: what a plugin may answer, and plugins by name.

The built-in plugins (scheduler_core.engine.plugins) register themselves when the engine
package is imported; a session enables them by name (`ClusterSnapshot.plugins`, default
DEFAULT_PLUGINS). See plugins/__init__.py for how the session consults them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from scheduler_core.engine.framework.queue_hooks import QueueHooks
    from scheduler_core.engine.framework.session import Session
    from scheduler_core.engine.framework.state import WorkloadState


class Plugin:
    """Base class: every hook returns None ("no opinion")."""

    name = ""

    def on_session_open(self, session: Session) -> None:
        """Work out what the plugin needs from the session (its running pods bound)."""
        return None

    def queue_hooks(self) -> QueueHooks | None:
        """The queue hooks this plugin answers for the open session, or None."""
        return None

    def job_order_key(self, w: WorkloadState) -> tuple[float, ...] | None:
        """Order of workloads inside a queue (smaller first)."""
        return None

    def victim_order_key(self, session: Session, w: WorkloadState) -> tuple[float, ...] | None:
        """Order in which running workloads are chosen as victims (smaller first)."""
        return None

    def protected_until(self, session: Session, w: WorkloadState) -> float | None:
        """Time until which `w` must not be evicted whole, or None."""
        return None

    def gang_counts(self, w: WorkloadState) -> dict[str, int] | None:
        """Pods per group that must start together."""
        return None

    def on_session_close(self) -> None:
        """Let go of the session (it is freed by reference counting: see
        Session.close)."""
        return None


_REGISTRY: dict[str, type[Plugin]] = {}

DEFAULT_PLUGINS: tuple[str, ...] = ("priority", "gang", "proportion", "minruntime")
"""Plugins enabled when a snapshot does not name any."""

ALWAYS_ENABLED: tuple[str, ...] = ("proportion",)
"""Plugins enabled even when a snapshot's list leaves them out (added at its end)."""


def register(cls: type[Plugin]) -> type[Plugin]:
    """Class decorator: make a plugin available by its `name`."""
    _REGISTRY[cls.name] = cls
    return cls


def registered_plugins() -> list[str]:
    """Names of every registered plugin."""
    return sorted(_REGISTRY)


def build_plugins(names: Sequence[str] | None) -> list[Plugin]:
    """Instances of the named plugins (DEFAULT_PLUGINS when None), and of those
    ALWAYS_ENABLED that the names leave out."""
    chosen = DEFAULT_PLUGINS if names is None else tuple(names)
    chosen += tuple(n for n in ALWAYS_ENABLED if n not in chosen)
    unknown = [n for n in chosen if n not in _REGISTRY]
    if unknown:
        raise ValueError(f"unknown plugins: {', '.join(unknown)}")
    return [_REGISTRY[n]() for n in chosen]


T = TypeVar("T")


def answering(plugins: Sequence[Plugin], hook: str) -> list[Plugin]:
    """The plugins that override `hook` (the others always answer None), in order:
    asking only those gives the same first answer for less work."""
    base = getattr(Plugin, hook)
    return [p for p in plugins if getattr(type(p), hook) is not base]


def first_answer(plugins: Sequence[Plugin], ask: Callable[[Plugin], T | None]) -> T | None:
    """The first non-None answer of `ask` over `plugins`."""
    for p in plugins:
        answer = ask(p)
        if answer is not None:
            return answer
    return None
