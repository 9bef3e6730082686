"""A real LDAP directory for the sign-in tests: Debian's slapd started on a free loopback
port with a throwaway database and a small lab tree (people and groups), loaded with
ldap3. Skipped where slapd is not installed (bin/test installs it with apt-get)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SLAPD = "/usr/sbin/slapd"
MODULES = "/usr/lib/ldap"
SCHEMAS = "/etc/ldap/schema"
SUFFIX = "dc=lab,dc=test"
ROOT_DN = f"cn=admin,{SUFFIX}"
ROOT_PASSWORD = "root-secret"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"
START_SECONDS = 15

CONF = """\
include {schemas}/core.schema
include {schemas}/cosine.schema
include {schemas}/inetorgperson.schema
include {schemas}/nis.schema
pidfile {dir}/slapd.pid
modulepath {modules}
moduleload back_mdb
database mdb
maxsize 10485760
suffix "{suffix}"
rootdn "{root_dn}"
rootpw {root_password}
directory {dir}/db
access to attrs=userPassword by anonymous auth by * none
access to * by * read
"""

PEOPLE_ENTRIES = {
    "carol": ("carol-pw", "Carol", "Vision", "carol@lab.test"),
    "dave": ("dave-pw", "Dave", "Ops", "dave@lab.test"),
    "alice": ("directory-alice-pw", "Alice", "Directory", "alice@lab.test"),
}
GROUP_MEMBERS = {
    "vision-researchers": ["carol", "alice"],  # groupOfNames needs a member left
    "research-viewers": ["carol"],
    "fairway-admins": ["dave"],
}


@dataclass
class Directory:
    """A running slapd: its URL, and an admin connection to change its tree."""

    url: str

    def admin(self):
        import ldap3

        connection = ldap3.Connection(self.url, ROOT_DN, ROOT_PASSWORD, auto_bind=True)
        return connection

    def remove_member(self, group: str, uid: str) -> None:
        import ldap3

        with self.admin() as connection:
            connection.modify(
                f"cn={group},{GROUPS}", {"member": [(ldap3.MODIFY_DELETE, [f"uid={uid},{PEOPLE}"])]}
            )
            assert connection.result["result"] == 0, connection.result


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _load_tree(url: str) -> None:
    import ldap3

    with ldap3.Connection(url, ROOT_DN, ROOT_PASSWORD, auto_bind=True) as c:
        c.add(SUFFIX, ["dcObject", "organization"], {"o": "Lab", "dc": "lab"})
        for ou in ("people", "groups"):
            c.add(f"ou={ou},{SUFFIX}", ["organizationalUnit"], {"ou": ou})
        for uid, (password, first, last, mail) in PEOPLE_ENTRIES.items():
            c.add(
                f"uid={uid},{PEOPLE}",
                ["inetOrgPerson"],
                {"uid": uid, "cn": f"{first} {last}", "givenName": first, "sn": last,
                 "mail": mail, "userPassword": password},
            )  # fmt: skip
        for cn, members in GROUP_MEMBERS.items():
            c.add(
                f"cn={cn},{GROUPS}",
                ["groupOfNames"],
                {"cn": cn, "member": [f"uid={m},{PEOPLE}" for m in members]},
            )
            assert c.result["result"] == 0, c.result


def _wait_until_up(url: str, process: subprocess.Popen) -> None:
    import ldap3
    from ldap3.core.exceptions import LDAPException

    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.skip(f"slapd exited at start: {process.stderr.read().decode()[-500:]}")
        try:
            ldap3.Connection(url, ROOT_DN, ROOT_PASSWORD, auto_bind=True).unbind()
            return
        except LDAPException:
            time.sleep(0.1)
    pytest.skip("slapd did not answer")


@pytest.fixture(scope="session")
def slapd(tmp_path_factory) -> Iterator[Directory]:
    """A throwaway slapd on a loopback port, with the lab tree loaded."""
    if not (os.path.exists(SLAPD) and Path(MODULES, "back_mdb.so").exists()):
        pytest.skip(f"{SLAPD} is missing (apt-get install slapd)")
    where = tmp_path_factory.mktemp("slapd")
    (where / "db").mkdir()
    conf = where / "slapd.conf"
    conf.write_text(
        CONF.format(
            schemas=SCHEMAS, dir=where, modules=MODULES, suffix=SUFFIX,
            root_dn=ROOT_DN, root_password=ROOT_PASSWORD,
        )
    )  # fmt: skip
    url = f"ldap://127.0.0.1:{_free_port()}"
    process = subprocess.Popen(
        [SLAPD, "-f", str(conf), "-h", f"{url}/", "-d", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_until_up(url, process)
        _load_tree(url)
        yield Directory(url=url)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
