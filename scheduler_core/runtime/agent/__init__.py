"""The agent backend: pods run as real processes by node agents (docs/agent.md).

- `channel`: how the server side reaches a node's connected agent (the channel layer group
  its `/ws/agents/` consumer joins).
- `backend`, `reconcile`, `reports`: what the scheduler wants running against what the
  agents report; starts, stops and the workload lifecycle (starting, running, completed,
  failed, re-queued).
"""
