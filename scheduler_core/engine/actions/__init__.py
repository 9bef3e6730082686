"""Actions of a cycle, least disruptive first: faults, allocate, consolidate, reclaim,
preempt, expand; the Determined policies run their own pools (see policies/)."""
