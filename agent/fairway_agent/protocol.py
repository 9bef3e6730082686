"""The agent protocol (version 1): message types, their required fields, and a validator.

Pure Python, no dependencies: the node agent and the server's `/ws/agents/` consumer both
use it, so the two sides can never disagree on a name. docs/agent.md describes each
message. A device is `{"index": int, "uuid": str, "model": str, "memory_mib": int}`.
"""

from __future__ import annotations

import json
from typing import Any

VERSION = 1

# Close codes of the websocket.
CLOSE_UNAUTHORIZED = 4401  # a wrong, expired or revoked credential
CLOSE_FORBIDDEN = 4403  # the credential of another node
CLOSE_VERSION = 4400  # a protocol version this side does not speak
CLOSE_TRY_AGAIN = 4503  # the server cannot serve now (its database is down): reconnect

# Error codes of an `error` message.
ERR_MALFORMED = "malformed"
ERR_OUT_OF_ORDER = "out_of_order"
ERR_UNKNOWN_RUN = "unknown_run"
ERR_VERSION = "version"
ERR_UNAUTHORIZED = "unauthorized"
ERR_FORBIDDEN = "forbidden"
ERR_TOO_LARGE = "too_large"
ERR_UNAVAILABLE = "unavailable"
# A start refused because its epoch is not above the highest this node has seen: no state
# of the run is reported (it never ran here); the server sends it again with a new epoch
# if it still wants it.
ERR_STALE_START = "stale_start"

# Bounds of a frame, whichever side sends it: a log chunk (64 KiB, base64) fits easily.
MAX_FRAME_BYTES = 1024 * 1024
MAX_DEPTH = 16
MAX_SEQ = 2**53  # frames of one connection

# Run states an agent reports.
RUN_STARTING = "starting"
RUN_RUNNING = "running"
RUN_EXITED = "exited"
RUN_START_FAILED = "start_failed"
RUN_STATES = frozenset({RUN_STARTING, RUN_RUNNING, RUN_EXITED, RUN_START_FAILED})

# Why the server stops a run.
STOP_PREEMPT = "preempt"
STOP_CANCEL = "cancel"
STOP_FAILED_PEER = "failed-peer"
STOP_LOST = "lost"
STOP_REASONS = frozenset({STOP_PREEMPT, STOP_CANCEL, STOP_FAILED_PEER, STOP_LOST})

# A pod's ports (a start's `ports`: names; a run_state's `ports`: name -> port number).
MAX_PORTS = 8
PORT_VARIABLE = "FAIRWAY_PORT_"  # + the name in capitals, dashes as underscores
PROXY_PREFIX_VARIABLE = "FAIRWAY_PROXY_PREFIX"


def port_variable(name: str, prefix: str = PORT_VARIABLE) -> str:
    """The environment variable of port `name` (`web-ui` -> FAIRWAY_PORT_WEB_UI)."""
    return prefix + name.upper().replace("-", "_")


# Required fields of each message type, by sender (the envelope's v, seq, type aside).
FROM_AGENT: dict[str, tuple[str, ...]] = {
    "hello": ("node", "agent_version", "devices", "cpu", "memory_gib", "max_epoch", "runs"),
    "run_state": ("run", "epoch", "state"),
    "log": ("run", "offset", "data"),
    "usage": ("at", "gpus", "runs"),
    "heartbeat": (),
    "ack": ("ack",),
    "error": ("code", "message"),
}
FROM_SERVER: dict[str, tuple[str, ...]] = {
    "welcome": ("node", "keep", "log_offsets", "heartbeat_interval", "usage_interval"),
    "start": ("run", "epoch", "workload", "env", "gpus", "gpu_fraction", "grace_period"),
    "signal": ("run", "reason", "grace_period"),
    "ack": ("ack",),
    "error": ("code", "message"),
}


class ProtocolError(ValueError):
    """A message that breaks the protocol; `code` is one of the ERR_* codes."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def encode(type: str, seq: int, ack: int | None = None, **body: Any) -> str:
    """One frame: the envelope and the body, as JSON text."""
    frame: dict[str, Any] = {"v": VERSION, "seq": seq, "type": type, **body}
    if ack is not None:
        frame["ack"] = ack
    return json.dumps(frame, separators=(",", ":"))


def _depth(value: Any) -> int:
    """How deeply lists and objects nest in `value` (without recursion)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, depth = todo.pop()
        children = item.values() if isinstance(item, dict) else item
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            todo.extend((child, depth + 1) for child in children)
    return deepest


def loads(
    text: str | bytes, *, max_bytes: int = MAX_FRAME_BYTES, max_depth: int = MAX_DEPTH
) -> Any:
    """A JSON text with a bounded size and nesting (a websocket frame from an untrusted
    peer); ProtocolError when it is not one."""
    if len(text) > max_bytes:
        raise ProtocolError(ERR_TOO_LARGE, f"a message has at most {max_bytes} bytes")
    try:
        value = json.loads(text)
    except RecursionError:
        raise ProtocolError(ERR_MALFORMED, f"nested deeper than {max_depth} levels") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(ERR_MALFORMED, f"not valid JSON ({exc})") from None
    if _depth(value) > max_depth:
        raise ProtocolError(ERR_MALFORMED, f"nested deeper than {max_depth} levels")
    return value


def decode(text: str | bytes, *, sender: str) -> dict[str, Any]:
    """Parse and check a frame sent by `sender` ("agent" or "server"); raises
    ProtocolError naming what is wrong."""
    frame = loads(text)
    if not isinstance(frame, dict):
        raise ProtocolError(ERR_MALFORMED, "a message is a JSON object")
    if frame.get("v") != VERSION:
        raise ProtocolError(ERR_VERSION, f"protocol version {frame.get('v')!r} is not {VERSION}")
    seq = frame.get("seq")
    if not isinstance(seq, int) or isinstance(seq, bool) or not 1 <= seq <= MAX_SEQ:
        raise ProtocolError(ERR_MALFORMED, f"seq must be an integer from 1 to {MAX_SEQ}")
    kinds = FROM_AGENT if sender == "agent" else FROM_SERVER
    kind = frame.get("type")
    if kind not in kinds:
        raise ProtocolError(ERR_MALFORMED, f"unknown message type {kind!r} from the {sender}")
    missing = [name for name in kinds[kind] if name not in frame]
    if missing:
        raise ProtocolError(ERR_MALFORMED, f"{kind} lacks {', '.join(missing)}")
    ack = frame.get("ack")
    if ack is not None and (
        not isinstance(ack, int) or isinstance(ack, bool) or not 0 <= ack <= MAX_SEQ
    ):
        raise ProtocolError(ERR_MALFORMED, f"ack must be an integer from 0 to {MAX_SEQ}")
    return frame
