"""The executors, one package each, registered by backend in runtime.registry
(docs/executors.md): `simulated` (runs end on Fairway's clock) and `agent` (node agents
run pods as real processes)."""
