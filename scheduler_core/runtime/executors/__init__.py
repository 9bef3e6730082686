"""Executors: the backends that run placed pods (one package each)."""
