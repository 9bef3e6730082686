"""The Django authentication backend for the lab's directory (settings'
AUTHENTICATION_BACKENDS lists it after the local users' ModelBackend when LDAP_URL is set).
Everything that signs in with a password uses it: the console's and the admin's sign-in
pages and the API's HTTP Basic (tokens, `fairway login`)."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.backends import ModelBackend

from scheduler_core.directory.accounts import directory_user_sync
from scheduler_core.directory.ldap import directory_user


class DirectoryBackend(ModelBackend):
    """A user the directory knows, with their password checked by the directory; their
    account and roles are brought in step with it (directory.accounts)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        conf = getattr(settings, "LDAP_DIRECTORY", None)
        if conf is None or username is None or password is None:
            return None
        found = directory_user(conf, username, password)
        if found is None:
            return None
        user = directory_user_sync(found=found, roles=conf.roles_of(found.groups), config=conf)
        return user if user is not None and self.user_can_authenticate(user) else None
