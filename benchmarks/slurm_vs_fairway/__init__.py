"""Fairway deciding with Slurm executing against Slurm alone (fair-share, backfill), on the
same slice of the Philly trace and the same local Slurm: `python -m
benchmarks.slurm_vs_fairway [--quick]`. See __main__ for what it prints."""

from __future__ import annotations

import os

import django

# the executor lives in scheduler_core.runtime, which imports the models: Django is set up
# before anything of this package is imported (SQLite under var/ unless DATABASE_URL)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
