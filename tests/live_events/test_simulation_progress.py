"""A what-if run's live progress bar: only its creator and system admins may follow it."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from scheduler_core.choices import SimulationStatus
from scheduler_core.models import Simulation
from scheduler_core.services.simulations import publish_progress
from tests import factories
from tests.live_events.sockets import TIMEOUT, connect, run, subscribe

pytestmark = pytest.mark.django_db(transaction=True)


def test_progress_reaches_the_creator_and_system_admins_only(cluster, open_socket):
    creator = cluster["dept_admin"]
    other_admin = factories.department_admin(cluster["other_dept"], "ops-admin")
    sim = Simulation.objects.create(name="what if", source="live", created_by=creator)
    group = f"simulation-{sim.pk}"

    def advance():
        sim.status, sim.progress, sim.progress_message = SimulationStatus.RUNNING, 0.4, "halfway"
        sim.save()
        publish_progress(sim)

    async def body():
        sockets = {}
        for key, user in (
            ("creator", creator),
            ("admin", cluster["admin"]),
            ("other", other_admin),
            ("researcher", cluster["researcher"]),
        ):
            sockets[key] = await connect(open_socket, user)
            reply = await subscribe(sockets[key], [group])
            allowed = key in ("creator", "admin")
            assert reply["groups"] == ([group] if allowed else [])
            assert reply["denied"] == ([] if allowed else [group])
        await database_sync_to_async(advance)()
        for key in ("creator", "admin"):
            message = await sockets[key].receive_json_from(timeout=TIMEOUT)
            assert message["type"] == "simulation.progress"
            assert message["group"] == group
            assert message["simulation"]["progress"] == 0.4
            assert message["simulation"]["progress_message"] == "halfway"
            assert message["simulation"]["status"] == "running"
        for key in ("other", "researcher"):
            assert await sockets[key].receive_nothing(timeout=0.2)
        for ws in sockets.values():
            await ws.disconnect()

    run(body)
