"""Workloads as the CLI sees them: finding one from what the user typed, the states, and
the columns shared by `list` and `top`."""

from __future__ import annotations

from typing import Any

from fairway_cli.client import ApiClient
from fairway_cli.errors import NotFound, UsageError
from fairway_cli.output import age, number, shorten

# The API's WorkloadStatus; "not finished" is what `list` and `top` show by default.
UNFINISHED = ("pending", "running", "suspended")
TERMINAL = frozenset({"completed", "failed", "cancelled"})
REASON_WIDTH = 48


def find(client: ApiClient, ref: str) -> dict[str, Any]:
    """The workload (detail shape) named by an id, `project/name`, or a name unique among
    the workloads the user can see."""
    ref = ref.strip()
    if ref.isdigit():
        return dict(client.get(f"workloads/{ref}/"))
    if ref.count("/") == 1:
        project, name = ref.split("/")
        matches = _named(client, name, project=project)
        if not matches:
            raise NotFound(f"no workload {name!r} in project {project!r} that you can see")
        return dict(client.get(f"workloads/{matches[0]['id']}/"))
    if not ref or "/" in ref:
        raise UsageError(f"{ref!r} is not a workload: give its id, PROJECT/NAME or its name")
    matches = _named(client, ref)
    if not matches:
        raise NotFound(f"no workload named {ref!r} that you can see")
    if len(matches) > 1:
        projects = ", ".join(sorted(m["project"] for m in matches))
        raise NotFound(
            f"{len(matches)} workloads are named {ref!r} (projects {projects}): "
            "give PROJECT/NAME or the id"
        )
    return dict(client.get(f"workloads/{matches[0]['id']}/"))


def _named(client: ApiClient, name: str, project: str | None = None) -> list[dict[str, Any]]:
    """Workloads with exactly this name (the API's `name` filter matches parts of names)."""
    params: dict[str, str] = {"name": name}
    if project:
        params["project"] = project
    return [w for w in client.pages("workloads/", params) if w["name"] == name]


def pools_label(workload: dict[str, Any]) -> str:
    """Its candidate pools, or `any`."""
    return ",".join(workload.get("pools") or []) or "any"


def gpus_label(workload: dict[str, Any]) -> str:
    """GPUs with every pod placed."""
    return number(workload.get("total_gpus"))


def reason_label(workload: dict[str, Any], width: int = REASON_WIDTH) -> str:
    """The pending reason on one short line."""
    return shorten(workload.get("pending_reason") or "", width)


LIST_COLUMNS = ("ID", "NAME", "PROJECT", "STATUS", "GPUS", "POOL", "AGE", "REASON")


def list_row(workload: dict[str, Any]) -> list[str]:
    """A workload's cells under LIST_COLUMNS."""
    return [
        str(workload["id"]),
        workload["name"],
        workload["project"],
        workload["status"],
        gpus_label(workload),
        pools_label(workload),
        age(workload.get("submitted_at")),
        reason_label(workload),
    ]
