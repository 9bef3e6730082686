"""Benchmarks: harnesses that print figures; not product code (run with python -m)."""
