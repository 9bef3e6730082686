"""A job trace replayed from the console: uploaded with its window and settings, refused
beside the field at fault, and shown side by side with FIFO and backfill."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from console.trace_results import outcome_text, trace_context
from scheduler_core.models import Simulation
from scheduler_core.services.simulations import simulation_create
from scheduler_core.whatif.run_figures import figures_from_json
from scheduler_core.whatif.tasks import run_simulation_task
from tests.factories import TRACE_CSV, TRACE_OPTIONS

pytestmark = pytest.mark.django_db


def form(**changes) -> dict:
    return {
        "name": "philly day",
        "source": "trace",
        "horizon": 3600,
        "trace_file": SimpleUploadedFile("trace.csv", TRACE_CSV.encode()),
        "trace_start": "2017-10-25T19:00",
        "trace_hours": 2,
        "trace_nodes": 4,
        "trace_gpus_per_node": 8,
        "team_nodes_file": SimpleUploadedFile("vc.csv", b"vc,node num\na,1\nb,1\n"),
        "trace_settings": ["reclaim_weighs_lost_work", "reserve_for_gangs"],
        "trace_config": '{"max_preemptions_per_workload": 2}',
    } | changes


def test_admin_uploads_a_trace_with_its_window_and_settings(client_for, cluster):
    response = client_for("admin").post(reverse("console:simulations"), form())
    simulation = Simulation.objects.get()
    assert response["Location"] == reverse("console:simulation_detail", args=[simulation.pk])
    options = simulation.trace_options
    assert options["team_nodes"] == {"a": 1, "b": 1} and options["nodes"] == 4
    assert options["config"] == {
        "profile": "lab",
        "reclaim_weighs_lost_work": True,
        "reserve_for_gangs": True,
        "max_preemptions_per_workload": 2,
    }


def test_problems_show_beside_the_field_at_fault(client_for, cluster):
    response = client_for("admin").post(
        reverse("console:simulations"), form(trace_config='{"reserve": 1}', trace_hours=0)
    )
    assert response.status_code == 200 and not Simulation.objects.exists()
    errors = response.context["form"].errors
    assert errors["trace_config"] == ["unknown key 'reserve'"]
    assert errors["trace_hours"] == ["must be more than 0 and at most 168, got 0"]
    empty = client_for("admin").post(
        reverse("console:simulations"), form(trace_start="2018-01-01T00:00")
    )
    assert empty.context["form"].errors["trace_start"] == [
        "no job of the trace is submitted in the 2 hours from 2018-01-01 00:00"
    ]
    missing = client_for("admin").post(
        reverse("console:simulations"),
        form(trace_file="", team_nodes_file=SimpleUploadedFile("vc.csv", b"team,n\n")),
    )
    errors = missing.context["form"].errors
    assert errors["trace_file"] == ["upload the trace (CSV)"]
    assert "vc,node num" in errors["team_nodes_file"][0]


def test_uploaded_files_are_kept_for_the_next_try_after_an_error(client_for, cluster):
    """issue 34, item 12: the form lost both uploaded files after an error. They are kept
    (for their uploader only), said so beside their fields, and used by the next try."""
    client = client_for("admin")
    refused = client.post(reverse("console:simulations"), form(trace_hours=0))
    assert refused.status_code == 200 and not Simulation.objects.exists()
    html = refused.content.decode()
    assert "Kept from your last try: <strong>trace.csv</strong>" in html
    assert "Kept from your last try: <strong>vc.csv</strong>" in html
    kept = refused.context["form"].kept
    tokens = {
        "trace_kept": kept["trace_file"].token,
        "team_nodes_kept": kept["team_nodes_file"].token,
    }
    assert all(f'value="{token}"' in html for token in tokens.values())

    others = client_for("dept_admin").post(
        reverse("console:simulations"), form(trace_file="", team_nodes_file="") | tokens
    )
    assert others.context["form"].errors["trace_file"] == ["upload the trace (CSV)"]

    again = client.post(
        reverse("console:simulations"), form(trace_file="", team_nodes_file="") | tokens
    )
    simulation = Simulation.objects.get()
    assert again["Location"] == reverse("console:simulation_detail", args=[simulation.pk])
    assert simulation.trace_options["team_nodes"] == {"a": 1, "b": 1}


def test_the_page_shows_the_schedulers_side_by_side_with_charts(client_for, cluster):
    sim = simulation_create(
        user=cluster["admin"],
        name="a day",
        source="trace",
        trace_text=TRACE_CSV,
        trace=TRACE_OPTIONS,
    )
    run_simulation_task.apply(args=[sim.pk])
    page = client_for("admin").get(reverse("console:simulation_detail", args=[sim.pk]))
    html = page.content.decode()
    assert page.status_code == 200
    assert "Fairway ran the window&#x27;s 6 jobs to their end in" in html
    assert "FIFO with backfill" in html and "makespan (h)" in html
    assert html.count("data-trace-chart=") == 3
    assert "GPUs asked by waiting jobs" in html
    assert "2 h of it from 2017-10-25T19:00 UTC on 4 nodes \u00d7 8 GPUs" in html
    # issue 34, item 12: the three charts share one scale (y axis and hours) to compare
    charts = html.split("data-trace-chart=")[1:]
    scales = {
        (
            tuple(
                re.findall(r'text-anchor="end">(\d+(?:\.\d+)?)</text>', chart.split("</svg>")[0])
            ),
            tuple(re.findall(r'text-anchor="(?:start|middle|end)">([\d.]+ h)</text>', chart)),
        )
        for chart in charts
    }
    assert len(scales) == 1, scales


def test_two_trace_runs_compare_by_the_engines_figures(client_for, cluster):
    runs = []
    for name, config in (("kai", {"profile": "kai"}), ("lab", {})):
        sim = simulation_create(
            user=cluster["admin"],
            name=name,
            source="trace",
            trace_text=TRACE_CSV,
            trace={**TRACE_OPTIONS, "config": config},
        )
        run_simulation_task.apply(args=[sim.pk])
        runs.append(sim)
    url = reverse("console:simulation_compare") + f"?id={runs[0].pk}&id={runs[1].pk}"
    html = client_for("admin").get(url).content.decode()
    assert "In lab, compared with kai, Fairway&#x27;s makespan from" in html
    assert "work thrown away from" in html
    assert '<th class="num">kai</th><th class="num">lab</th>' in html


def test_a_trace_run_is_not_compared_with_a_scenario(client_for, cluster):
    trace = simulation_create(
        user=cluster["admin"], name="t", source="trace", trace_text=TRACE_CSV, trace=TRACE_OPTIONS
    )
    other = Simulation.objects.create(name="live", source="live", created_by=cluster["admin"])
    url = reverse("console:simulation_compare") + f"?id={trace.pk}&id={other.pk}"
    response = client_for("admin").get(url, follow=True)
    assert "Compare a trace run with another trace run" in response.content.decode()


def test_the_outcome_says_how_many_jobs_never_ended(cluster):
    sim = simulation_create(
        user=cluster["admin"], name="t", source="trace", trace_text=TRACE_CSV, trace=TRACE_OPTIONS
    )
    run_simulation_task.apply(args=[sim.pk])
    runs = Simulation.objects.get().result["runs"]
    runs["fairway"] |= {"completed": 5, "unfinished": 1}
    figures = {label: figures_from_json(data) for label, data in runs.items()}
    assert outcome_text(figures).startswith(
        "Fairway ran 5 of the window's 6 jobs (1 never ended) to their end in"
    )


def test_the_engine_comes_first_whatever_order_the_database_keeps(cluster):
    sim = simulation_create(
        user=cluster["admin"], name="t", source="trace", trace_text=TRACE_CSV, trace=TRACE_OPTIONS
    )
    run_simulation_task.apply(args=[sim.pk])
    result = Simulation.objects.get().result
    result["runs"] = dict(reversed(list(result["runs"].items())))  # as jsonb may give it
    assert trace_context(result)["titles"] == ["Fairway", "FIFO", "FIFO with backfill"]
