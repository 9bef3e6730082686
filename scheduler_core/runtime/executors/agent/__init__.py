"""The agent executor: pods run as real processes by node agents (docs/agent.md).

- `executor`: the executor (start and signal frames; liveness as its `observe`).
- `channel`: how the server side reaches a node's connected agent (the channel layer group
  its `/ws/agents/` consumer joins).
- `reports`: the agents' `run_state` and `hello` frames, turned into neutral run reports
  for runtime.lifecycle.
- `liveness`: agent nodes that fall silent are unreachable, then down.
"""
