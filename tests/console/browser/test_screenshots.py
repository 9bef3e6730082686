"""Screenshots of every main page on the demo cluster, for docs/screenshots/ (README)."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.core.management import call_command
from django.utils import timezone
from playwright.sync_api import expect

from scheduler_core.choices import EventType
from scheduler_core.models import Node, NodePool, Project, SchedulingEvent, Workload
from scheduler_core.services.simulations import simulation_create, simulation_run
from scheduler_core.services.workloads import WorkloadRequest, workload_submit
from tests.console.browser.conftest import SCREENSHOTS, backend, run_cycle


def spread_history_over_the_last_hour() -> None:
    """The demo starts now; give its allocations an hour of history for the chart."""
    now = timezone.now()
    events = SchedulingEvent.objects.filter(type=EventType.ALLOCATED).order_by("id")
    count = events.count()
    for i, event in enumerate(events):
        event.created_at = now - timedelta(minutes=55) + timedelta(minutes=50 * i / count)
        event.save(update_fields=["created_at"])


def synthetic_trace(jobs: int = 180, hours: float = 6.0) -> str:
    """A seeded trace in the Philly columns: mostly one-GPU jobs of minutes to hours, some
    gangs, four teams arriving in bursts."""
    rng = random.Random(17)
    start = datetime(2017, 10, 25, 19, 0)
    lines = ["timestamp,duration,num_gpus,cluster"]
    for _ in range(jobs):
        at = start + timedelta(seconds=rng.betavariate(1.3, 2.0) * hours * 3600)
        gpus = rng.choices([1, 2, 4, 8, 16], weights=[70, 10, 8, 8, 4])[0]
        duration = min(rng.lognormvariate(7.5, 1.2), 12 * 3600)
        team = rng.choices(["vision", "nlp", "speech", "robotics"], weights=[4, 3, 2, 1])[0]
        lines.append(f"{at:%Y-%m-%d %H:%M:%S},{duration:.0f},{gpus},{team}")
    return "\n".join(lines) + "\n"


def a_big_gang_reclaims_over_quota_work(cluster_user) -> None:
    vision = Project.objects.get(name="vision")
    pool = NodePool.objects.get(name="a100")
    workload_submit(
        user=cluster_user,
        request=WorkloadRequest(
            project=vision,
            name="llama-pretrain",
            pods=4,
            gpus=8,
            pools=[pool],
            spec={"duration": 7200},
        ),
    )


def test_screenshots_of_the_demo_cluster(live):
    backend(call_command, "seed_demo", verbosity=0)
    for _ in range(3):
        run_cycle()
    backend(spread_history_over_the_last_hour)
    backend(a_big_gang_reclaims_over_quota_work, User.objects.get(username="alice"))
    for _ in range(3):
        run_cycle()
    admin = live.page("admin", password="fairway-admin")
    shots = {
        "overview": "/?window=1h",
        "queue": "/queue/",
        "workloads": "/workloads/",
        "nodes": "/nodes/",
        "nodes-list": "/nodes/list/",
        "events": "/events/",
        "tokens": "/tokens/",
    }
    for name, path in shots.items():
        admin.goto(live.url + path)
        expect(admin.locator("h1")).to_be_visible()
        live.screenshot(admin, name)

    running = Workload.objects.filter(status="running", pods__gt=1).first() or (
        Workload.objects.filter(status="running").first()
    )
    admin.goto(f"{live.url}/workloads/{running.pk}/")
    live.screenshot(admin, "workload-detail")

    busiest = Node.objects.filter(pool__name="a100").order_by("name").first()
    admin.goto(f"{live.url}/nodes/{busiest.pk}/")
    expect(admin.locator("h1")).to_be_visible()
    live.screenshot(admin, "node-detail")

    phone = live.page("admin", password="fairway-admin", width=390, height=844)
    phone.goto(f"{live.url}/?window=1h")
    expect(phone.locator("h1")).to_be_visible()
    phone.screenshot(path=str(SCREENSHOTS / "overview-phone.png"))  # the first screen only

    admin.goto(f"{live.url}/quotas/")
    # nlp has a workload waiting in t4 for want of quota there: give it 2 GPUs
    row = admin.locator("tr[data-quota-row='project-nlp-t4']")
    row.locator("input[name$='-gpus']").first.fill("2")
    row.locator("button:has-text('What if?')").click()
    expect(
        admin.locator("tr[data-quota-row='project-nlp-t4'] + tr [data-whatif-now]")
    ).to_be_visible()
    live.screenshot(admin, "quotas")

    # the same change replayed for an hour, as the Simulations page runs it
    simulation = backend(
        simulation_create,
        user=User.objects.get(username="admin"),
        name="What if nlp had 2 GPUs in t4",
        source="live",
        changes={"quotas": [{"project": "nlp", "pool": "t4", "gpus": 2}]},
        horizon=3600,
    )
    backend(simulation_run, simulation_id=simulation.pk)
    admin.goto(f"{live.url}/simulations/{simulation.pk}/")
    expect(admin.locator("[data-run=changed]")).to_be_visible()
    live.screenshot(admin, "simulation")

    # a day's worth of jobs of four teams replayed against FIFO and backfill
    trace = backend(
        simulation_create,
        user=User.objects.get(username="admin"),
        name="Six busy hours, weighed evictions",
        source="trace",
        trace_text=synthetic_trace(),
        trace={
            "start": "2017-10-25T19:00",
            "hours": 6,
            "nodes": 8,
            "team_nodes": {"vision": 4, "nlp": 2, "speech": 1, "robotics": 1},
            "config": {"reclaim_weighs_lost_work": True, "consolidation_weighs_lost_work": True},
        },
    )
    backend(simulation_run, simulation_id=trace.pk)
    admin.goto(f"{live.url}/simulations/{trace.pk}/")
    expect(admin.locator("[data-trace-figures]")).to_be_visible()
    live.screenshot(admin, "simulation-trace")

    alice = live.page("alice", password="fairway-alice")
    alice.goto(f"{live.url}/submit/")
    alice.fill("#id_name", "llama-finetune")
    alice.fill("#id_pods", "2")
    alice.fill("#id_gpus", "4")
    expect(alice.locator("#submit-preview")).to_contain_text("2 pods \u00d7 4 GPU")
    live.screenshot(alice, "submit")
    alice.goto(f"{live.url}/")
    live.screenshot(alice, "overview-researcher")
