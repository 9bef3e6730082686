"""Determined's native policies, each scheduling whole pools: `fairshare` and
`priority` (with or without preemption). Zero-GPU workloads get a separate pass."""
