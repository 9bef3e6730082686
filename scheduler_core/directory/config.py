"""The directory's settings, read once from the environment (README, "Configuration").

`LDAP_GROUP_ROLES` maps directory groups (by cn) to Fairway roles, one mapping per
`;`-separated item: `GROUP=project:NAME:ROLE` (ROLE researcher or viewer),
`GROUP=department:NAME:admin` (or `viewer`), `GROUP=system:admin`. A group may appear in
several items; a user gets every role of every group they are in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from django.core.exceptions import ImproperlyConfigured

KINDS = {
    "project": ("researcher", "viewer"),
    "department": ("admin", "viewer"),
    "system": ("admin",),
}
"""The roles a directory group may give, by the kind of thing they are held in."""


@dataclass(frozen=True)
class GroupRole:
    """A role that members of directory group `group` hold: in the project or department
    `owner` (None for `system`)."""

    group: str
    kind: str
    owner: str | None
    role: str


@dataclass(frozen=True)
class DirectoryConfig:
    """Where the directory is and how users and their groups are found in it."""

    url: str
    user_base: str
    user_filter: str = "(uid={username})"
    group_base: str = ""
    group_filter: str = "(|(member={dn})(uniqueMember={dn})(memberUid={username}))"
    bind_dn: str = ""
    bind_password: str = ""
    start_tls: bool = False
    timeout: float = 5.0
    roles: tuple[GroupRole, ...] = field(default_factory=tuple)

    def roles_of(self, groups: Iterable[str]) -> list[GroupRole]:
        """The roles members of `groups` (cn values) hold."""
        names = {g.lower() for g in groups}
        return [r for r in self.roles if r.group.lower() in names]


def parse_group_roles(text: str) -> tuple[GroupRole, ...]:
    """`LDAP_GROUP_ROLES` read (see the module docstring); a mistake names the item."""
    roles = []
    for item in filter(None, (part.strip() for part in text.split(";"))):
        group, _, target = item.partition("=")
        kind, _, rest = target.strip().partition(":")
        owner, _, role = rest.rpartition(":") if kind != "system" else ("", "", rest)
        allowed = KINDS.get(kind)
        if (
            not group.strip()
            or allowed is None
            or role not in allowed
            or (kind != "system") != bool(owner)
        ):
            raise ImproperlyConfigured(
                f"LDAP_GROUP_ROLES: cannot read {item!r}: write "
                "GROUP=project:NAME:researcher|viewer, GROUP=department:NAME:admin|viewer "
                "or GROUP=system:admin"
            )
        roles.append(GroupRole(group.strip(), kind, owner or None, role))
    return tuple(roles)


def directory_config(env: Mapping[str, str]) -> DirectoryConfig | None:
    """The directory's settings from `env`, or None when `LDAP_URL` is not set (local
    users only)."""
    url = env.get("LDAP_URL", "").strip()
    if not url:
        return None
    user_base = env.get("LDAP_USER_BASE", "").strip()
    if not user_base:
        raise ImproperlyConfigured("LDAP_URL is set: set LDAP_USER_BASE too")
    defaults = DirectoryConfig(url=url, user_base=user_base)
    return DirectoryConfig(
        url=url,
        user_base=user_base,
        user_filter=env.get("LDAP_USER_FILTER") or defaults.user_filter,
        group_base=env.get("LDAP_GROUP_BASE", "").strip(),
        group_filter=env.get("LDAP_GROUP_FILTER") or defaults.group_filter,
        bind_dn=env.get("LDAP_BIND_DN", ""),
        bind_password=env.get("LDAP_BIND_PASSWORD", ""),
        start_tls=env.get("LDAP_START_TLS", "").lower() in ("1", "true", "yes"),
        timeout=float(env.get("LDAP_TIMEOUT") or defaults.timeout),
        roles=parse_group_roles(env.get("LDAP_GROUP_ROLES", "")),
    )
