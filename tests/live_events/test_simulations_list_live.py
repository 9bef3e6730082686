"""The runs list learns of new what-if runs live: the group `simulations` is for admins, and
a new run's message reaches only those who may see that run (its id alone, never its name)."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from scheduler_core.services.simulations import simulation_create
from tests import factories
from tests.factories import TINY_SCENARIO
from tests.live_events.sockets import TIMEOUT, connect, run, subscribe

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def no_worker(monkeypatch):
    """The run waits for a worker; this test only watches it being created."""
    monkeypatch.setattr("scheduler_core.services.simulations._enqueue", lambda pk: None)


def test_a_new_run_reaches_the_lists_of_those_who_may_see_it(cluster, open_socket):
    creator = cluster["dept_admin"]
    other_admin = factories.department_admin(cluster["other_dept"], "ops-admin")
    users = {
        "creator": creator,
        "admin": cluster["admin"],
        "other": other_admin,
        "researcher": cluster["researcher"],
    }

    def create():
        return simulation_create(
            user=creator, name="secret plan", source="scenario", scenario_text=TINY_SCENARIO
        )

    async def body():
        sockets = {}
        for key, user in users.items():
            sockets[key] = await connect(open_socket, user)
            reply = await subscribe(sockets[key], ["simulations"])
            allowed = key != "researcher"  # the Simulations page is for admins
            assert reply["groups"] == (["simulations"] if allowed else [])
            assert reply["denied"] == ([] if allowed else ["simulations"])
        simulation = await database_sync_to_async(create)()
        expected = {
            "type": "simulation.created",
            "group": "simulations",
            "simulation": {"id": simulation.pk},
        }
        for key in ("creator", "admin"):
            assert await sockets[key].receive_json_from(timeout=TIMEOUT) == expected
        # Another department's admin is on the list page too, but may not see this run.
        for key in ("other", "researcher"):
            assert await sockets[key].receive_nothing(timeout=0.3)
        for ws in sockets.values():
            await ws.disconnect()

    run(body)


def test_the_list_group_is_dropped_when_the_user_is_no_longer_an_admin(cluster, open_socket):
    from scheduler_core.models import DepartmentMembership

    dept_admin = cluster["dept_admin"]

    def demote():
        DepartmentMembership.objects.filter(user=dept_admin).delete()

    async def body():
        ws = await connect(open_socket, dept_admin)
        assert (await subscribe(ws, ["simulations"]))["groups"] == ["simulations"]
        await database_sync_to_async(demote)()
        reply = await subscribe(ws, ["cluster"])  # every subscribe checks access again
        assert reply == {
            "type": "unsubscribed",
            "groups": ["simulations"],
            "reason": "access revoked",
        }
        await ws.disconnect()

    run(body)
