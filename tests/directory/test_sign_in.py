"""Signing in with the lab's LDAP directory (a real slapd, tests/directory/conftest.py):
directory users get an account and the roles their groups map to, local users still sign
in, and a directory entry never takes over a local account."""

from __future__ import annotations

import base64

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from rest_framework.test import APIClient

from scheduler_core.directory.config import directory_config, parse_group_roles
from scheduler_core.models import DepartmentMembership, ProjectMembership
from tests.directory.conftest import GROUPS, PEOPLE, Directory

BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "scheduler_core.directory.backend.DirectoryBackend",
]
ROLES = (
    "vision-researchers=project:vision:researcher; research-viewers=department:research:viewer;"
    " fairway-admins=system:admin"
)


@pytest.fixture
def directory(slapd: Directory, settings, cluster) -> Directory:
    settings.LDAP_DIRECTORY = directory_config(
        {
            "LDAP_URL": slapd.url,
            "LDAP_USER_BASE": PEOPLE,
            "LDAP_GROUP_BASE": GROUPS,
            "LDAP_GROUP_ROLES": ROLES,
        }
    )
    settings.AUTHENTICATION_BACKENDS = BACKENDS
    return slapd


def sign_in(username: str, password: str) -> Client:
    client = Client()
    response = client.post("/login/", {"username": username, "password": password})
    client.signed_in = response.status_code == 302  # type: ignore[attr-defined]
    return client


def test_a_directory_user_signs_in_with_the_roles_of_their_groups(directory, cluster):
    client = sign_in("carol", "carol-pw")
    assert client.signed_in
    carol = get_user_model().objects.get(username="carol")
    assert not carol.has_usable_password()  # the directory keeps the password
    assert (carol.email, carol.first_name) == ("carol@lab.test", "Carol")
    assert ProjectMembership.objects.get(user=carol, project=cluster["vision"]).role == "researcher"
    assert DepartmentMembership.objects.get(user=carol, department=cluster["dept"]).role == "viewer"
    assert not carol.is_superuser
    assert "vision" in client.get("/submit/").content.decode()  # she may submit there


def test_a_wrong_password_or_an_unknown_user_is_refused(directory):
    assert not sign_in("carol", "not-her-password").signed_in
    assert not sign_in("nobody", "carol-pw").signed_in
    assert not sign_in("carol", "").signed_in
    assert not sign_in("*", "carol-pw").signed_in  # a filter character is only a character
    assert not get_user_model().objects.filter(username="carol").exists()


def test_a_mapped_admin_group_makes_a_system_admin(directory):
    assert sign_in("dave", "dave-pw").signed_in
    assert get_user_model().objects.get(username="dave").is_superuser


def test_roles_follow_the_directory_at_each_sign_in(directory, cluster):
    assert sign_in("carol", "carol-pw").signed_in
    directory.remove_member("vision-researchers", "carol")
    try:
        assert sign_in("carol", "carol-pw").signed_in
        assert (
            not ProjectMembership.objects.filter(project=cluster["vision"])
            .filter(user__username="carol")
            .exists()
        )
    finally:
        import ldap3

        with directory.admin() as connection:
            connection.modify(
                f"cn=vision-researchers,{GROUPS}",
                {"member": [(ldap3.MODIFY_ADD, [f"uid=carol,{PEOPLE}"])]},
            )


def test_local_users_still_sign_in_and_are_never_taken_over(directory, cluster):
    # alice is a local user (tests.factories' password); the directory has an alice too
    assert sign_in("alice", "pw-12345678").signed_in
    assert not sign_in("alice", "directory-alice-pw").signed_in
    assert get_user_model().objects.get(username="alice").has_usable_password()


def test_the_api_creates_a_token_for_directory_credentials(directory):
    """What `fairway login` does with a username and password."""
    client = APIClient()
    basic = base64.b64encode(b"carol:carol-pw").decode()
    response = client.post(
        "/api/v1/tokens/", {"name": "laptop"}, format="json", HTTP_AUTHORIZATION=f"Basic {basic}"
    )
    assert response.status_code == 201, response.content
    assert response.json()["key"].startswith("fw_")


def test_an_unreachable_directory_leaves_local_users_signing_in(settings, cluster):
    settings.LDAP_DIRECTORY = directory_config(
        {"LDAP_URL": "ldap://127.0.0.1:1", "LDAP_USER_BASE": PEOPLE, "LDAP_TIMEOUT": "1"}
    )
    settings.AUTHENTICATION_BACKENDS = BACKENDS
    assert not sign_in("carol", "carol-pw").signed_in  # refused, not a 500
    assert sign_in("alice", "pw-12345678").signed_in


def test_group_roles_are_read_or_the_mistake_is_named():
    (role,) = parse_group_roles("ml=project:vision:researcher")
    assert (role.group, role.kind, role.owner, role.role) == (
        "ml",
        "project",
        "vision",
        "researcher",
    )
    with pytest.raises(ImproperlyConfigured, match="'ml=project:vision:boss'"):
        parse_group_roles("ml=project:vision:boss")
    with pytest.raises(ImproperlyConfigured, match="LDAP_USER_BASE"):
        directory_config({"LDAP_URL": "ldap://x"})
    assert directory_config({}) is None
