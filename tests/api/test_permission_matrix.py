"""Every route and method against every role: what each role gets, in one table.

Roles come from the `cluster` fixture: the system admin, the admin of department
"research" (projects vision and nlp), alice (researcher of vision), victor (viewer of
vision), an outsider with no membership, and anonymous. Anonymous always gets 401.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from scheduler_core.choices import SimulationSource, WorkloadStatus
from scheduler_core.models import Quota, Simulation
from scheduler_core.services.agents import join_token_create
from scheduler_core.services.tokens import token_create
from tests import factories
from tests.api.conftest import ROLES


@dataclass(frozen=True)
class Route:
    """One request and the status each signed-in role gets."""

    method: str
    path: str
    body: dict[str, Any] | None
    admin: int
    dept_admin: int
    researcher: int
    viewer: int
    outsider: int

    def expected(self, role: str) -> int:
        return {
            "system_admin": self.admin,
            "department_admin": self.dept_admin,
            "researcher": self.researcher,
            "viewer": self.viewer,
            "outsider": self.outsider,
            "anonymous": 401,
        }[role]


def everyone(method: str, path: str, body=None, status: int = 200) -> Route:
    return Route(method, path, body, status, status, status, status, status)


def admin_only(method: str, path: str, body=None, ok: int = 200, others: int = 403) -> Route:
    return Route(method, path, body, ok, others, others, others, others)


WL = "/api/v1/workloads/{wl}"
NEW_WL = {"project": "vision", "name": "new-wl", "gpus": 1}
AGENT = {
    "join_token": "fwj_not-a-token", "hostname": "gpu-x", "devices": [], "cpu": 1,
    "memory_gib": 1, "agent_version": "1",
}  # fmt: skip

ROUTES: list[Route] = [
    # organisation
    everyone("get", "/api/v1/departments/"),
    Route("get", "/api/v1/departments/research/", None, 200, 200, 200, 200, 404),
    Route("get", "/api/v1/departments/ops/", None, 200, 404, 404, 404, 404),
    admin_only("post", "/api/v1/departments/", {"name": "new-dept"}, ok=201),
    # a department's rank, weight and quotas are the system admin's; its admins describe it
    Route("patch", "/api/v1/departments/research/", {"rank": 1}, 200, 403, 403, 403, 404),
    Route(
        "patch",
        "/api/v1/departments/research/",
        {"over_quota_weight": 1e6},
        200,
        403,
        403,
        403,
        404,
    ),
    Route("patch", "/api/v1/departments/research/", {"description": "x"}, 200, 200, 403, 403, 404),
    Route("delete", "/api/v1/departments/empty/", None, 204, 404, 404, 404, 404),
    Route("delete", "/api/v1/departments/ops/", None, 409, 404, 404, 404, 404),
    Route(
        "post",
        "/api/v1/departments/research/members/",
        {"username": "outsider", "role": "viewer"},
        200,
        403,
        403,
        403,
        404,
    ),
    Route(
        "delete",
        "/api/v1/departments/research/members/dept-admin/",
        None,
        204,
        403,
        403,
        403,
        404,
    ),
    everyone("get", "/api/v1/projects/"),
    Route("get", "/api/v1/projects/vision/", None, 200, 200, 200, 200, 404),
    Route("get", "/api/v1/projects/infra/", None, 200, 404, 404, 404, 404),
    Route(
        "post",
        "/api/v1/projects/",
        {"department": "research", "name": "new-proj"},
        201,
        201,
        403,
        403,
        403,
    ),
    Route("patch", "/api/v1/projects/vision/", {"rank": 2}, 200, 200, 403, 403, 404),
    Route("delete", "/api/v1/projects/nlp/", None, 204, 204, 404, 404, 404),
    Route("delete", "/api/v1/projects/vision/", None, 409, 409, 403, 403, 404),
    Route(
        "post",
        "/api/v1/projects/vision/members/",
        {"username": "outsider", "role": "viewer"},
        200,
        200,
        403,
        403,
        404,
    ),
    Route("delete", "/api/v1/projects/vision/members/victor/", None, 204, 204, 403, 403, 404),
    # cluster
    everyone("get", "/api/v1/pools/"),
    everyone("get", "/api/v1/pools/a100/"),
    admin_only("post", "/api/v1/pools/", {"name": "h100"}, ok=201),
    admin_only("patch", "/api/v1/pools/a100/", {"policy": "fairshare"}),
    admin_only("delete", "/api/v1/pools/a100/", ok=409),
    everyone("get", "/api/v1/nodes/"),
    everyone("get", "/api/v1/nodes/gpu-1/"),
    admin_only("post", "/api/v1/nodes/", {"pool": "a100", "name": "gpu-9", "gpu_count": 8}, 201),
    admin_only("post", "/api/v1/nodes/gpu-1/cordon/"),
    admin_only("post", "/api/v1/nodes/gpu-1/uncordon/"),
    admin_only("post", "/api/v1/nodes/gpu-1/drain/"),
    admin_only("post", "/api/v1/nodes/gpu-1/revoke-credential/"),
    admin_only("delete", "/api/v1/nodes/gpu-2/", ok=204),
    # node agents: the join token authenticates a registration, whoever sends it
    Route("post", "/api/v1/agents/register/", AGENT, 401, 401, 401, 401, 401),
    admin_only("get", "/api/v1/pools/a100/join-tokens/"),
    admin_only("post", "/api/v1/pools/a100/join-tokens/", {"description": "x"}, ok=201),
    admin_only("post", "/api/v1/pools/a100/join-tokens/{join_token}/revoke/"),
    # quotas
    everyone("get", "/api/v1/quotas/"),
    Route("get", "/api/v1/quotas/{vision_quota}/", None, 200, 200, 200, 200, 404),
    Route(
        "post",
        "/api/v1/quotas/",
        {"pool": "a100", "project": "vision", "gpus": 6},
        200,
        200,
        403,
        403,
        403,
    ),
    admin_only("post", "/api/v1/quotas/", {"pool": "a100", "department": "research", "gpus": 14}),
    Route("patch", "/api/v1/quotas/{vision_quota}/", {"gpus": 6}, 200, 200, 403, 403, 404),
    # workloads
    everyone("get", "/api/v1/workloads/"),
    Route("get", WL + "/", None, 200, 200, 200, 200, 404),
    Route("get", WL + "/events/", None, 200, 200, 200, 200, 404),
    Route("get", WL + "/logs/", None, 200, 200, 200, 200, 404),
    Route("post", "/api/v1/workloads/", NEW_WL, 201, 201, 201, 403, 403),
    Route("post", "/api/v1/workloads/", {**NEW_WL, "project": "infra"}, 201, 403, 403, 403, 403),
    Route("post", "/api/v1/workloads/bulk/", {"workloads": [NEW_WL]}, 201, 201, 201, 403, 403),
    Route("post", WL + "/cancel/", None, 200, 200, 200, 403, 404),
    Route("post", WL + "/suspend/", None, 200, 200, 200, 403, 404),
    Route("post", "/api/v1/workloads/{suspended}/resume/", None, 200, 200, 200, 403, 404),
    Route("post", WL + "/priority/", {"priority": 70}, 200, 200, 200, 403, 404),
    # queues, events, overview
    everyone("get", "/api/v1/queues/"),
    everyone("get", "/api/v1/queues/a100/"),
    everyone("get", "/api/v1/events/"),
    everyone("get", "/api/v1/overview/"),
    everyone("get", "/api/v1/usage/"),
    everyone("get", "/api/v1/me/"),
    # tokens
    everyone("get", "/api/v1/tokens/"),
    everyone("post", "/api/v1/tokens/", {"name": "ci"}, status=201),
    admin_only("delete", "/api/v1/tokens/{admin_token}/", ok=204, others=404),
    # simulations
    everyone("get", "/api/v1/simulations/"),
    Route(
        "post",
        "/api/v1/simulations/",
        {"name": "what if", "source": "live"},
        201,
        201,
        403,
        403,
        403,
    ),
    admin_only("get", "/api/v1/simulations/{simulation}/", others=404),
    admin_only("get", "/api/v1/simulations/{simulation}/scenario/", others=404),
    admin_only("delete", "/api/v1/simulations/{simulation}/", ok=204, others=404),
    Route("post", "/api/v1/simulations/preview/", {}, 200, 200, 403, 403, 403),
]


@pytest.fixture
def world(cluster):
    """Objects the routes refer to, by the placeholder names used in ROUTES."""
    factories.department("empty")
    workload = factories.workload(cluster["vision"], "train")
    suspended = factories.workload(cluster["vision"], "paused", status=WorkloadStatus.SUSPENDED)
    token, _ = token_create(user=cluster["admin"], name="admin-token")
    join_token, _ = join_token_create(pool=cluster["pool"], by=None)
    simulation = Simulation.objects.create(
        name="admin run",
        source=SimulationSource.SCENARIO,
        status="succeeded",
        created_by=cluster["admin"],
        scenario_text="pools: []",
    )
    return {
        "wl": workload.pk,
        "suspended": suspended.pk,
        "vision_quota": Quota.objects.get(project=cluster["vision"]).pk,
        "admin_token": token.pk,
        "simulation": simulation.pk,
        "join_token": join_token.pk,
    }


def _route_id(route: Route) -> str:
    return f"{route.method.upper()} {route.path}" + (f" {sorted(route.body)}" if route.body else "")


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("route", ROUTES, ids=_route_id)
def test_role_gets_expected_status(route: Route, role: str, client_as, world):
    client = client_as(role)
    path = route.path.format(**world)
    response = getattr(client, route.method)(path, route.body, format="json")
    assert response.status_code == route.expected(role), response.content[:400]
    if response.status_code >= 400:
        body = response.json()
        assert set(body) >= {"error", "detail"}, body
        assert body["detail"], body


def test_every_api_route_is_in_the_matrix():
    """A new route must be added to ROUTES (and so get its permission test)."""
    from api.urls import v1

    tested = {(r.method, _pattern_of(r.path)) for r in ROUTES}
    missing = []
    for pattern in _flatten(v1):
        view = pattern.callback
        methods = _methods(view)
        for method in methods:
            if (method, _normalise(str(pattern.pattern))) not in tested:
                missing.append(f"{method.upper()} {pattern.pattern}")
    assert not missing, f"routes without a permission-matrix row: {missing}"


def _flatten(patterns, prefix=""):
    for p in patterns:
        if hasattr(p, "url_patterns"):
            yield from _flatten(p.url_patterns, prefix + str(p.pattern))
        else:
            yield p


def _methods(view) -> list[str]:
    actions = getattr(view, "actions", None)
    if actions:
        return [m for m in actions if m != "head"]
    cls = view.view_class
    return [m for m in ("get", "post", "patch", "put", "delete") if hasattr(cls, m)]


def _normalise(regex: str) -> str:
    """Router regex such as `^workloads/(?P<pk>[0-9]+)/cancel/$` -> `workloads/*/cancel/`."""
    import re

    text = regex.lstrip("^").rstrip("$")
    return re.sub(r"\(\?P<[^>]+>[^)]*\)", "*", text)


def _pattern_of(path: str) -> str:
    import re

    text = path.removeprefix("/api/v1/")
    # placeholders and concrete names in the position of a URL variable
    text = re.sub(r"\{[a-z_]+\}", "*", text)
    parts = text.strip("/").split("/")
    collection = parts[0]
    shape = [collection]
    rest = parts[1:]
    if rest and rest[0] not in {"bulk", "preview", "register"}:
        shape.append("*")
        rest = rest[1:]
    if rest:
        shape.append(rest[0])
        rest = rest[1:]
    if rest:
        shape.append("*")
        shape.extend(rest[1:])  # e.g. pools/*/join-tokens/*/revoke/
    return "/".join(shape) + "/"
