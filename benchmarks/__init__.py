"""Harnesses that time Fairway's code; not part of the product (run with python -m)."""
