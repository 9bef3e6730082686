"""A what-if result in words, and the charts' legends."""

from __future__ import annotations

from console.charts import Series, stacked_area
from console.simulation_summary import comparison_text, run_text
from scheduler_core.whatif.compare import compare_runs


def run(projects: dict[str, float], *, preemptions: int = 0, pending: int = 0) -> dict:
    return {
        "projects": {
            name: {"mean_gpus": g, "final_gpus": g, "mean_pending_seconds": 0.0, "preemptions": 0}
            for name, g in projects.items()
        },
        "cluster": {
            "capacity_gpus": 16,
            "mean_gpus": sum(projects.values()),
            "mean_utilization": sum(projects.values()) / 16,
            "preemptions": preemptions,
            "pending_at_end": pending,
        },
    }


def test_the_comparison_says_who_rises_and_falls_and_what_else_moved():
    comparison = compare_runs(
        run({"vision": 8.0, "nlp": 0.0}, preemptions=0, pending=2),
        run({"vision": 6.5, "nlp": 1.8}, preemptions=1, pending=1),
    )
    text = comparison_text(comparison)
    assert text.startswith(
        "With the change, nlp's mean GPUs rise from 0.0 to 1.8; vision's fall from 8.0 to 6.5."
    )
    assert "1 preemption more (0 → 1)" in text
    assert "1 workload fewer still waiting at the end (2 → 1)" in text


def test_nothing_moving_is_said_too():
    comparison = compare_runs(run({"vision": 8.0}), run({"vision": 8.0}))
    assert "no project's mean GPUs move" in comparison_text(comparison)


def test_a_run_alone_says_how_full_the_cluster_was():
    text = run_text(run({"vision": 8.0, "nlp": 4.0}, preemptions=2))
    assert text == (
        "The cluster's 16 GPUs were 75% used on average; mean GPUs per project: "
        "vision 8.0, nlp 4.0; 2 preemptions."
    )


def test_every_stacked_chart_names_its_series_colours_axes_and_capacity():
    svg = stacked_area(
        ["0m", "10m", "20m"],
        [
            Series("vision", "var(--p0)", [0, 4, 4]),
            Series("nlp <x>", "var(--p1)", [0, 2, 2]),
            Series("idle", "var(--p2)", [0, 0, 0]),  # never drawn, so not in the legend
        ],
        capacity=16,
    )
    legend = svg.split("data-chart-legend", 1)[1]
    assert 'data-legend-entry="vision"' in legend and "fill:var(--p0)" in legend
    assert "nlp &lt;x&gt;" in legend and "fill:var(--p1)" in legend
    assert "idle" not in legend
    assert "capacity (16)" in legend
    assert 'data-axis="x"' in svg and ">time</text>" in svg
    assert 'data-axis="y"' in svg and ">GPUs</text>" in svg
    assert "capacity 16 GPUs" in svg


def test_the_detail_page_says_the_outcome_in_words(client_for, cluster):
    from django.urls import reverse

    from scheduler_core.models import Simulation

    baseline = run({"vision": 8.0, "nlp": 0.0})
    changed = run({"vision": 6.0, "nlp": 2.0})
    for r, values in ((baseline, [8, 8]), (changed, [6, 6])):
        r["timeline"] = {"at": [0, 600], "projects": {"vision": values, "nlp": [0, 8 - values[0]]}}
    simulation = Simulation.objects.create(
        name="nlp 2",
        source="live",
        status="succeeded",
        progress=1,
        created_by=cluster["admin"],
        result={
            "horizon": 600,
            "runs": {"baseline": baseline, "changed": changed},
            "comparison": compare_runs(baseline, changed),
        },
    )
    html = (
        client_for("admin")
        .get(reverse("console:simulation_detail", args=[simulation.pk]))
        .content.decode()
    )
    assert (
        "With the change, nlp&#x27;s mean GPUs rise from 0.0 to 2.0; "
        "vision&#x27;s fall from 8.0 to 6.0" in html
    )
    assert 'data-legend-entry="nlp"' in html
