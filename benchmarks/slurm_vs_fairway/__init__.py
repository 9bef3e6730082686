"""Fairway deciding with Slurm executing against Slurm alone (fair-share, backfill), on the
same slice of the Philly trace and the same local Slurm: `python -m
benchmarks.slurm_vs_fairway [--quick]`. See run.py for what it prints.

Importing this package changes nothing in the process: `standalone.configure()` (what
`python -m` runs first) gives the benchmark its own database and no broker.
"""
