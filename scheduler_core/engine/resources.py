"""Resource vectors: GPUs (devices, possibly fractional), CPU cores and memory (GiB)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

RESOURCE_NAMES: tuple[str, ...] = ("gpus", "cpu", "memory")
"""The resources the engine accounts for, in a fixed order."""

EPSILON = 1e-9
"""Tolerance for float comparisons of resource amounts (fractions like 0.1 + 0.2)."""

UNLIMITED = math.inf
"""An amount meaning "no bound" (a node that omits cpu, a queue without a limit)."""


@dataclass(frozen=True, slots=True)
class Resources:
    """An amount of each resource: `gpus` (devices), `cpu` (cores), `memory` (GiB).

    Any field may be `math.inf` (unlimited), e.g. a node that does not state its CPU
    or a queue without a limit. Arithmetic is per resource.
    """

    gpus: float = 0.0
    cpu: float = 0.0
    memory: float = 0.0

    def as_tuple(self) -> tuple[float, float, float]:
        """(gpus, cpu, memory)."""
        return (self.gpus, self.cpu, self.memory)

    def get(self, name: str) -> float:
        """The amount of the named resource ("gpus", "cpu" or "memory")."""
        return float(getattr(self, name))

    def items(self) -> Iterator[tuple[str, float]]:
        """(name, amount) pairs in RESOURCE_NAMES order."""
        yield "gpus", self.gpus
        yield "cpu", self.cpu
        yield "memory", self.memory

    def to_dict(self, *, finite_only: bool = True) -> dict[str, float]:
        """A plain dict; unlimited amounts are left out unless `finite_only` is False."""
        return {k: v for k, v in self.items() if not finite_only or math.isfinite(v)}

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.gpus + other.gpus, self.cpu + other.cpu, self.memory + other.memory)

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.gpus - other.gpus, self.cpu - other.cpu, self.memory - other.memory)

    def scale(self, factor: float) -> Resources:
        """Every amount multiplied by `factor`."""
        return Resources(self.gpus * factor, self.cpu * factor, self.memory * factor)

    def fits_in(self, other: Resources) -> bool:
        """True when every amount is at most the other's (within EPSILON)."""
        return (
            self.gpus <= other.gpus + EPSILON
            and self.cpu <= other.cpu + EPSILON
            and self.memory <= other.memory + EPSILON
        )


ZERO = Resources()
"""No resources."""


def format_amount(value: float) -> str:
    """A resource amount for humans: 8, 0.5, 2.25, 'unlimited'."""
    if math.isinf(value):
        return "unlimited"
    if abs(value - round(value)) <= EPSILON:
        return str(round(value))
    return f"{value:.2f}".rstrip("0").rstrip(".")
