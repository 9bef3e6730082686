"""What-if runs: a scenario file, or a copy of the live cluster with changes, replayed by
the scheduling engine's simulator and compared with the unchanged copy.

- export.scenario_from_live_cluster(): the live cluster as a FORMAT.md scenario dict.
- changes.validate_changes() / apply_changes(): the documented `changes` JSON shape.
- runner.run_whatif(): run baseline (and changed) copies over a horizon, reporting progress.
- compare.run_metrics() / compare_runs(): per-project allocation, pending time, preemptions,
  and who gains / who gets reclaimed.

Nothing here writes to the database: services.simulations does that.
"""
