"""The console's one websocket consumer: live scheduling events, simulation progress and
new simulations.

Protocol (URL `/ws/events/`, JSON text frames):

- An unauthenticated connection is accepted and closed at once with code 4401, so that a
  browser sees the code (a refused handshake only shows 1006) and can send the user to log in.
- Client -> server:
    {"action": "subscribe", "groups": ["cluster", "pool-2", "project-3", "workload-17"]}
    {"action": "unsubscribe", "groups": ["workload-17"]}
    {"action": "ping"}
- Server -> client:
    {"type": "subscribed", "groups": [accepted...], "denied": [refused...]}
    {"type": "unsubscribed", "groups": [...], "reason": "..."}   (reason only when the
        server drops groups itself, e.g. after the user lost access to a project)
    {"type": "event", "group": "project-3", "event": {...}}      (live_events.recording)
    {"type": "simulation.progress", "group": "simulation-5", "simulation": {...}}
    {"type": "simulation.created", "group": "simulations", "simulation": {"id": 5}}
        (a new what-if run: its id alone, the runs list fetches what it may show)
    {"type": "log", "group": "workload-17", "log": {"workload", "pod", "run", "offset",
        "next_offset", "text"}}                                                 (a pod's new output)
    {"type": "pong"}
    {"type": "error", "message": "...", "field": "groups"}      (bad message; never closes)

Groups and who may join them (the shared access rule, `visible_to`):
`cluster` and `pool-<id>` any signed-in user; `project-<id>` and `workload-<id>` those who may
see the project; `simulation-<id>` its creator and system admins; `simulations` (every new
run, for the runs list) department and system admins, and a run's message is forwarded only
to those who may see that run (selectors.simulations.simulations_visible_to, the rule of the
pages), so nobody learns of another's run. Whatever the group, an event
about a project the user cannot see is never forwarded, nor one about a department's own
quota to those who cannot see the department, and a preemption names the other side's
workload and project only to those who may see that project (live_events.other_side). The
user's visible projects are cached per connection and refreshed on every subscribe, every
ACCESS_TTL seconds, and at once when their memberships change (`access.changed` on the
group `user-<id>`).

A browser's connection lives as long as its session signs the user in: it is closed with
4401 as soon as that session signs out (`session.ended` on `user-<id>`), and at the next
refresh once the session has expired or was ended otherwise (a password change).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.contrib.auth import get_user, get_user_model
from django.http import HttpRequest
from django.utils.module_loading import import_string
from fairway_agent.protocol import ProtocolError
from fairway_agent.protocol import loads as bounded_json

from scheduler_core import access
from scheduler_core.db.consumer_dispatch import DirectDispatch
from scheduler_core.live_events import watched_groups
from scheduler_core.live_events.other_side import as_seen_by
from scheduler_core.live_events.recording import CLUSTER_GROUP, session_digest, user_group
from scheduler_core.models import NodePool, Project, Workload
from scheduler_core.selectors.simulations import simulations_visible_to
from scheduler_core.services.simulations import SIMULATIONS_GROUP

logger = logging.getLogger(__name__)

UNAUTHENTICATED = 4401
ACCESS_TTL = 15.0
MAX_GROUPS = 500
MAX_FRAME_BYTES = 64 * 1024  # a subscribe message of MAX_GROUPS names fits
KINDS = ("pool", "project", "workload", "simulation")
USAGE = 'send {"action": "subscribe", "groups": ["cluster", "project-3"]}'


class BadMessage(Exception):
    """A client message that cannot be acted on; answered with an error frame."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def parse_group(name: str) -> tuple[str, int | None] | None:
    """`("cluster", None)`, `("project", 3)`, ... or None when `name` is no known group."""
    if name in (CLUSTER_GROUP, SIMULATIONS_GROUP):
        return (name, None)
    kind, _, pk = name.partition("-")
    if kind in KINDS and pk.isascii() and pk.isdigit() and len(pk) < 19 and int(pk) > 0:
        return (kind, int(pk))
    return None


@dataclass
class AccessSnapshot:
    """What one user may see, as loaded at `loaded_at` (monotonic seconds)."""

    user: Any
    project_ids: set[int] | None  # None: every project and department (system admin)
    department_ids: set[int] = field(default_factory=set)
    loaded_at: float = field(default_factory=time.monotonic)

    def shown(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """`event` as this user may see it (live_events.other_side), or None when they may
        not see it at all: its project, or for a department's own event its department."""
        if self.project_ids is not None:
            project_id, department_id = event.get("project_id"), event.get("department_id")
            if project_id is not None and project_id not in self.project_ids:
                return None
            if project_id is None and department_id not in (None, *self.department_ids):
                return None
        details = event.get("details") or {}
        reason, shown_details = as_seen_by(
            self.project_ids,
            type=event.get("type", ""),
            project_id=event.get("project_id"),
            reason=event.get("reason", ""),
            details=details,
        )
        return (
            event
            if shown_details is details
            else {**event, "reason": reason, "details": shown_details}
        )


def load_access(user_id: int, session_key: str | None = None) -> AccessSnapshot | None:
    """Reload the user and the projects they may see; None when they may not sign in now,
    or (given the browser's session) when that session no longer signs them in."""
    if session_key is None:
        user = get_user_model().objects.filter(pk=user_id).first()
    else:
        user = session_user(session_key)
    if not access.is_authenticated(user) or user.pk != user_id:
        return None
    project_ids = access.visible_project_ids(user)
    if project_ids is None:
        return AccessSnapshot(user=user, project_ids=None)
    # Only a system admin sees every department, and they returned above.
    department_ids = access.visible_department_ids(user) or set()
    return AccessSnapshot(user=user, project_ids=project_ids, department_ids=department_ids)


def session_user(session_key: str):
    """Whom a session signs in now, as Django checks it for a request (expiry, the
    password's hash, an active user); AnonymousUser when nobody."""
    request = HttpRequest()
    request.session = import_string(f"{settings.SESSION_ENGINE}.SessionStore")(session_key)
    return get_user(request)


def authorize_groups(snapshot: AccessSnapshot, names: list[str]) -> tuple[list[str], list[str]]:
    """Split group names into (accepted, denied) for this user, in the order given: a few
    queries in all, however many groups."""
    parsed = {name: parse_group(name) for name in names}
    wanted: dict[str, list[tuple[str, int]]] = {kind: [] for kind in KINDS}
    for name, group in parsed.items():
        if group is not None and group[1] is not None:  # every group but the cluster's
            wanted[group[0]].append((name, group[1]))
    user = snapshot.user
    if snapshot.project_ids is None:
        projects = _existing(Project.objects.all(), wanted["project"])
    else:
        projects = {pk for _, pk in wanted["project"] if pk in snapshot.project_ids}
    allowed: dict[str, set[int]] = {
        "pool": _existing(NodePool.objects.all(), wanted["pool"]),
        "project": projects,
        "workload": _existing(Workload.objects.visible_to(user), wanted["workload"]),
        "simulation": _existing(simulations_visible_to(user), wanted["simulation"]),
    }
    accepted: list[str] = []
    denied: list[str] = []
    for name, group in parsed.items():
        if group is None:
            ok = False
        elif group[0] == SIMULATIONS_GROUP:
            ok = access.is_any_admin(user)  # who may open the Simulations page
        else:
            ok = group[0] == CLUSTER_GROUP or group[1] in allowed[group[0]]
        (accepted if ok else denied).append(name)
    return accepted, denied


def may_see_simulation(user, simulation_id: int) -> bool:
    """Whether `user` may see the run (the rule of the Simulations pages)."""
    return simulations_visible_to(user).filter(pk=simulation_id).exists()


def _existing(queryset, items: list[tuple[str, int]]) -> set[int]:
    if not items:
        return set()
    return set(queryset.filter(pk__in=[pk for _, pk in items]).values_list("pk", flat=True))


class EventsConsumer(DirectDispatch, AsyncJsonWebsocketConsumer):
    """One connection of one browser tab: explicit subscriptions, checked group by group."""

    async def connect(self) -> None:
        self.subscriptions: set[str] = set()
        self.watches: dict[str, tuple[str, ...]] = {}  # group -> its counts (watched_groups)
        self.snapshot: AccessSnapshot | None = None
        self.personal_group: str | None = None
        # The browser's session (AuthMiddlewareStack puts it in every real connection's
        # scope); a scope built without one (a test's) is trusted for its user alone.
        self.session_key: str | None = getattr(self.scope.get("session"), "session_key", None)
        await self.accept()
        user = self.scope.get("user")
        user_id = getattr(user, "pk", None) if getattr(user, "is_authenticated", False) else None
        if user_id is not None:
            self.snapshot = await self._load_access(user_id)
        if self.snapshot is None:
            await self.close(code=UNAUTHENTICATED)
            return
        self.personal_group = user_group(self.snapshot.user.pk)
        await self.channel_layer.group_add(self.personal_group, self.channel_name)

    async def disconnect(self, code: int) -> None:
        groups = set(getattr(self, "subscriptions", set()))
        if getattr(self, "personal_group", None):
            groups.add(self.personal_group)
        for group in groups:
            await self.channel_layer.group_discard(group, self.channel_name)
            await watched_groups.aunwatch(getattr(self, "watches", {}).pop(group, ()))

    # --- client -> server ----------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kw):
        if self.snapshot is None:
            return
        try:
            if text_data is None:
                raise BadMessage(f"send JSON text frames, not binary ones: {USAGE}")
            try:
                content = bounded_json(text_data, max_bytes=MAX_FRAME_BYTES)
            except ProtocolError as exc:
                raise BadMessage(f"{exc.message}: {USAGE}") from None
            await self.receive_json(content)
        except BadMessage as exc:
            frame = {"type": "error", "message": str(exc)}
            if exc.field:
                frame["field"] = exc.field
            await self.send_json(frame)

    async def receive_json(self, content: Any, **kwargs) -> None:
        if not isinstance(content, dict):
            raise BadMessage(f"a message must be a JSON object: {USAGE}")
        action = content.get("action")
        if action == "ping":
            await self.send_json({"type": "pong"})
            return
        if action not in ("subscribe", "unsubscribe"):
            raise BadMessage(
                f"unknown action {action!r}: use 'subscribe', 'unsubscribe' or 'ping'", "action"
            )
        groups = content.get("groups")
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise BadMessage(
                "groups must be a list of group names like 'cluster', 'pool-2', 'project-3', "
                "'workload-17', 'simulation-5' or 'simulations'",
                "groups",
            )
        groups = list(dict.fromkeys(groups))  # de-duplicate, keep order
        if action == "subscribe":
            await self.subscribe(groups)
        else:
            await self.unsubscribe(groups)

    async def subscribe(self, groups: list[str]) -> None:
        if len(self.subscriptions | set(groups)) > MAX_GROUPS:
            raise BadMessage(f"at most {MAX_GROUPS} groups per connection", "groups")
        await self.refresh_access()
        if self.snapshot is None:
            return
        accepted, denied = await database_sync_to_async(authorize_groups)(self.snapshot, groups)
        for group in accepted:
            if group not in self.subscriptions:
                self.watches[group] = await watched_groups.awatch(group)
                await self.channel_layer.group_add(group, self.channel_name)
                self.subscriptions.add(group)
        await self.send_json({"type": "subscribed", "groups": accepted, "denied": denied})

    async def unsubscribe(self, groups: list[str], reason: str = "") -> None:
        left = [g for g in groups if g in self.subscriptions]
        for group in left:
            await self.channel_layer.group_discard(group, self.channel_name)
            self.subscriptions.discard(group)
            await watched_groups.aunwatch(self.watches.pop(group, ()))
        frame: dict[str, Any] = {"type": "unsubscribed", "groups": left if reason else groups}
        if reason:
            frame["reason"] = reason
        await self.send_json(frame)

    # --- access ---------------------------------------------------------------------------

    async def refresh_access(self, *, force: bool = True) -> None:
        """Reload what the user may see; drop groups they lost; close if they lost access."""
        if self.snapshot is None:
            return
        if not force and time.monotonic() - self.snapshot.loaded_at < ACCESS_TTL:
            return
        self.snapshot = await self._load_access(self.snapshot.user.pk)
        if self.snapshot is None:
            await self.close(code=UNAUTHENTICATED)
            return
        if self.subscriptions:
            _, lost = await database_sync_to_async(authorize_groups)(
                self.snapshot, sorted(self.subscriptions)
            )
            if lost:
                await self.unsubscribe(lost, reason="access revoked")

    # --- channel layer -> client ------------------------------------------------------------

    async def scheduling_events(self, message: dict[str, Any]) -> None:
        """SchedulingEvents of one commit for one group (see live_events.recording), sent on
        one frame each, only those whose project the user may see."""
        if self.snapshot is None:
            return
        await self.refresh_access(force=False)
        group = message.get("group")
        if self.snapshot is None or (group is not None and group not in self.subscriptions):
            return  # left the group while this message was on its way
        for event in message.get("events") or []:
            shown = self.snapshot.shown(event)
            if shown is not None:
                await self.send_json({"type": "event", "group": group, "event": shown})

    async def simulation_progress(self, message: dict[str, Any]) -> None:
        """Progress of a what-if run (only its creator and system admins join its group)."""
        group = message.get("group")
        if self.snapshot is None or group not in self.subscriptions:
            return
        await self.send_json(
            {"type": "simulation.progress", "group": group, "simulation": message["simulation"]}
        )

    async def simulation_created(self, message: dict[str, Any]) -> None:
        """A new what-if run, for the runs list: its id, only to those who may see the run
        (the message's creator id stays on the server)."""
        if self.snapshot is None:
            return
        await self.refresh_access(force=False)  # drops the group if no longer an admin
        group = message.get("group")
        if self.snapshot is None or group not in self.subscriptions:
            return
        simulation_id = message["simulation"]["id"]
        if not await database_sync_to_async(may_see_simulation)(self.snapshot.user, simulation_id):
            return
        await self.send_json(
            {"type": "simulation.created", "group": group, "simulation": {"id": simulation_id}}
        )

    async def workload_log(self, message: dict[str, Any]) -> None:
        """New output of a workload's pod (node agents; `workload-<id>` groups only, which
        only those who may see the workload join)."""
        if self.snapshot is None:
            return
        await self.refresh_access(force=False)  # drops the group if access was lost
        group = message.get("group")
        if self.snapshot is None or group not in self.subscriptions:
            return
        await self.send_json({"type": "log", "group": group, "log": message["log"]})

    async def _load_access(self, user_id: int) -> AccessSnapshot | None:
        return await database_sync_to_async(load_access)(user_id, self.session_key)

    async def access_changed(self, message: dict[str, Any]) -> None:
        """The user's memberships changed: reload what they may see right away."""
        await self.refresh_access(force=True)

    async def session_ended(self, message: dict[str, Any]) -> None:
        """A session of the user signed out: close if it is this connection's."""
        if self.session_key and message.get("session") == session_digest(self.session_key):
            self.snapshot = None
            await self.close(code=UNAUTHENTICATED)
