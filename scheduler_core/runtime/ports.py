"""Ports of interactive pods (docs/interactive.md): what a workload declares (`spec.ports`,
checked by schemas.workloads), the proxy path of each pod's port, and the variables that
tell a pod its proxy prefix. The node's executor picks the port numbers
(Capability.EXPOSES_PORTS) and reports them; Fairway's web server proxies
`/proxy/<workload>/<pod>/<port>/...` to them (config.proxy)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fairway_agent.protocol import PROXY_PREFIX_VARIABLE, port_variable

PROXY_ROOT = "/proxy/"


def declared_ports(spec: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The names of the ports a workload's spec declares, in its order."""
    ports = (spec or {}).get("ports") or []
    return tuple(str(p["name"]) for p in ports if isinstance(p, dict) and "name" in p)


def port_env_name(name: str) -> str:
    """The variable that tells a pod port `name`'s number (FAIRWAY_PORT_<NAME>)."""
    return port_variable(name)


def proxy_path(workload_id: int, pod: str, port: str) -> str:
    """Where Fairway's web server serves port `port` of pod `pod` (`main-0`)."""
    return f"{PROXY_ROOT}{workload_id}/{pod}/{port}/"


def proxy_env(workload_id: int, pod: str, ports: Sequence[str]) -> dict[str, str]:
    """The proxy prefix of each of the pod's ports (FAIRWAY_PROXY_PREFIX_<NAME>), and of
    its first in FAIRWAY_PROXY_PREFIX: a notebook's base URL."""
    env = {
        port_variable(name, PROXY_PREFIX_VARIABLE + "_"): proxy_path(workload_id, pod, name)
        for name in ports
    }
    if ports:
        env[PROXY_PREFIX_VARIABLE] = proxy_path(workload_id, pod, ports[0])
    return env
