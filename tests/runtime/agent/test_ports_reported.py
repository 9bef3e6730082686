"""Where a pod's ports listen, as its agent reports them with `running`: recorded on the run
at the node's address (what the proxy dials), and checked by the schema layer first."""

from __future__ import annotations

import pytest
from django.utils import timezone
from fairway_agent import protocol

from scheduler_core.models import PodRun
from scheduler_core.models.agents import PodRunState
from scheduler_core.selectors.ports import open_ports
from tests import factories
from tests.runtime.agent.fake_agent import FakeAgent
from tests.runtime.agent.test_transport import isolated_channel_layer, run
from tests.runtime.agent.test_untrusted_agent import join, pool, registered

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["isolated_channel_layer", "join", "pool", "registered"]  # fixtures


def starting_run(node) -> PodRun:
    spec = {"command": "serve", "ports": [{"name": "web"}]}
    workload = factories.running_workload(factories.project(), [node], spec=spec)
    return PodRun.objects.create(
        workload=workload, node=node, pod_index=0, epoch=1, state=PodRunState.STARTING,
        allocation=workload.allocations.get(), started_at=timezone.now(),
    )  # fmt: skip


def report(token: str, node, pod: PodRun, **fields) -> dict:
    """The server's answer to the agent's `running` with `fields`."""

    async def body() -> dict:
        return await _report(token, node, pod, **fields)

    return run(body)


async def _report(token: str, node, pod: PodRun, **fields) -> dict:
    agent = FakeAgent(token)
    await agent.connect()
    await agent.hello(node.name, runs=[{"run": pod.pk, "epoch": 1, "state": "starting"}])
    await agent.send("run_state", run=pod.pk, epoch=1, state="running", **fields)
    answer = await agent.receive()
    await agent.close()
    return answer


def test_the_ports_of_a_running_pod_are_recorded_at_its_nodes_address(registered):
    node, token = registered
    pod = starting_run(node)
    assert report(token, node, pod, ports={"web": 41234})["type"] == "ack"
    pod.refresh_from_db()
    assert pod.state == PodRunState.RUNNING
    assert pod.ports == [{"name": "web", "host": "10.0.0.7", "port": 41234}]
    [port] = open_ports(pod.workload)
    assert (port.path, port.host, port.port) == (
        f"/proxy/{pod.workload_id}/main-0/web/",
        "10.0.0.7",
        41234,
    )


@pytest.mark.parametrize(
    "ports",
    [{"web": 0}, {"web": 70000}, {"Web!": 80}, {f"p{i}": 80 + i for i in range(9)}, {"web": "80"}],
    ids=["port-0", "port-70000", "bad-name", "nine-ports", "text-port"],
)
def test_bad_ports_get_an_error_frame_and_nothing_is_recorded(registered, ports):
    node, token = registered
    pod = starting_run(node)
    answer = report(token, node, pod, ports=ports)
    assert answer["type"] == "error" and answer["code"] == protocol.ERR_MALFORMED
    assert "ports" in answer["message"]
    pod.refresh_from_db()
    assert pod.ports == []
