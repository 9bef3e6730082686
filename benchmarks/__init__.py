"""Benchmarks: harnesses that print figures; not product code."""
