"""Who a username and password are in the directory: the user's entry found by a search
(as the service account, or anonymously), the password checked by binding as that entry,
and the cn of every group the entry is a member of. Values from the user are escaped
before they go into a filter."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import ldap3
from ldap3.core.exceptions import LDAPException
from ldap3.utils.conv import escape_filter_chars

from scheduler_core.directory.config import DirectoryConfig

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class DirectoryUser:
    """A user as the directory describes them."""

    dn: str
    username: str
    email: str
    first_name: str
    last_name: str
    groups: tuple[str, ...]


def _first(entry: ldap3.Entry, attribute: str) -> str:
    values = entry.entry_attributes_as_dict.get(attribute) or []
    return str(values[0]) if values else ""


def _connection(conf: DirectoryConfig, user: str | None = None, password: str | None = None):
    seconds = max(1, round(conf.timeout))  # ldap3 packs them as whole seconds
    server = ldap3.Server(conf.url, connect_timeout=seconds, get_info=ldap3.NONE)
    connection = ldap3.Connection(
        server, user=user, password=password, receive_timeout=seconds, raise_exceptions=False
    )
    if conf.start_tls:
        connection.open()
        connection.start_tls()
    return connection


def directory_user(conf: DirectoryConfig, username: str, password: str) -> DirectoryUser | None:
    """The directory's user `username` if `password` is theirs; None otherwise, or when
    the directory cannot be reached (logged: local users can still sign in)."""
    if not username or not password:
        return None  # an empty password would be an anonymous bind, which always succeeds
    try:
        return _look_up(conf, username, password)
    except (LDAPException, OSError) as exc:
        logger.warning("LDAP directory %s: %s", conf.url, exc)
        return None


def _look_up(conf: DirectoryConfig, username: str, password: str) -> DirectoryUser | None:
    searcher = _connection(conf, conf.bind_dn or None, conf.bind_password or None)
    if not searcher.bind():
        logger.warning("LDAP directory %s: cannot search: %s", conf.url, searcher.result)
        return None
    try:
        search = conf.user_filter.format(username=escape_filter_chars(username))
        searcher.search(conf.user_base, search, attributes=["uid", "mail", "givenName", "sn", "cn"])
        if len(searcher.entries) != 1:
            return None
        entry = searcher.entries[0]
        dn = entry.entry_dn
        checker = _connection(conf, dn, password)
        if not checker.bind():
            return None
        checker.unbind()
        groups: list[str] = []
        if conf.group_base:
            wanted = conf.group_filter.format(
                dn=escape_filter_chars(dn), username=escape_filter_chars(username)
            )
            searcher.search(conf.group_base, wanted, attributes=["cn"])
            groups = [_first(g, "cn") for g in searcher.entries if _first(g, "cn")]
        return DirectoryUser(
            dn=dn,
            username=_first(entry, "uid") or username,
            email=_first(entry, "mail"),
            first_name=_first(entry, "givenName"),
            last_name=_first(entry, "sn"),
            groups=tuple(groups),
        )
    finally:
        searcher.unbind()
