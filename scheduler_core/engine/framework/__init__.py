"""The framework actions and plugins share (KAI-Scheduler's pkg/scheduler/framework):
the session over one cycle's snapshot and the hooks actions call on it, the statement
through which every change goes, and the mutable state of nodes, pools and workloads.

It knows nothing of particular actions; plugins answer the session's hooks.
"""
