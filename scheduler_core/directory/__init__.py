"""Sign-in with the lab's LDAP directory: its settings (`config`), the look-up of a user
and their groups (`ldap`), and the Django authentication backend (`backend`) that keeps a
directory user's account and roles in step with the directory at each sign-in
(directory.accounts)."""
