"""Writes. Every change to the domain goes through these typed, keyword-only functions, so
the API, the console, the CLI and the simulator share one path. They validate, raise
`django.core.exceptions.ValidationError` (a dict naming the field) or `PermissionDenied`,
record events, and request a scheduling cycle after commit."""
