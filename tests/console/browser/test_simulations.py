"""The Simulations page in a browser: a quota change picked in the form (not typed as
JSON), the runs list turning done live and showing runs started elsewhere, and the result
read in words and in a chart with a legend."""

from __future__ import annotations

from playwright.sync_api import expect

from scheduler_core.models import Simulation
from scheduler_core.services.simulations import simulation_create, simulation_run
from tests.console.browser.conftest import backend, fill_a100_with_nlp_waiting
from tests.factories import TRACE_CSV


def test_an_admin_picks_a_quota_change_and_reads_the_outcome(live, cluster, monkeypatch):
    fill_a100_with_nlp_waiting(cluster)
    # The run waits for a worker until the test plays the worker below.
    monkeypatch.setattr("scheduler_core.services.simulations._enqueue", lambda pk: None)

    page = live.page("admin")
    page.goto(f"{live.url}/simulations/")
    page.fill("#id_name", "nlp gets 4 GPUs")
    page.click("[data-add-change]")  # a second row, added in place by the script
    rows = page.locator("[data-change-rows] [data-change-row]")
    expect(rows).to_have_count(2)
    rows.nth(1).locator("[data-remove-change]").click()
    expect(rows.nth(1)).to_be_hidden()
    first = rows.nth(0)
    expect(first.locator("[data-field=gpus]")).to_be_hidden()  # no kind chosen yet
    first.locator("select[name$='-kind']").select_option("quota")
    first.locator("select[name$='-owner']").select_option("project:nlp")
    first.locator("select[name$='-pool']").select_option("a100")
    first.locator("input[name$='-gpus']").fill("4")
    expect(first.locator("[data-field=node]")).to_be_hidden()
    page.fill("#id_horizon", "600")
    page.click("button:has-text('Start')")
    expect(page.locator("h1")).to_have_text("nlp gets 4 GPUs")
    simulation = Simulation.objects.get()
    assert simulation.changes == {"quotas": [{"project": "nlp", "pool": "a100", "gpus": 4}]}

    page.goto(f"{live.url}/simulations/")
    cell = page.locator(f"#simulation-status-{simulation.pk}")
    expect(cell).to_contain_text("Queued")
    live.wait_live(page)
    page.evaluate("window.__sameDocument = true")
    backend(simulation_run, simulation_id=simulation.pk)  # the worker
    expect(cell).to_contain_text("Succeeded")
    expect(cell.locator(".progress")).to_have_attribute("aria-valuenow", "100")
    assert page.evaluate("window.__sameDocument") is True  # no reload

    page.click("a:has-text('nlp gets 4 GPUs')")
    summary = page.locator("[data-summary]")
    expect(summary).to_contain_text("With the change, nlp's mean GPUs rise from 0.0 to")
    legend = page.locator("[data-run=changed] [data-chart-legend]")
    expect(legend.locator("[data-legend-entry=nlp]")).to_have_count(1)
    expect(legend).to_contain_text("capacity (16)")


def test_a_run_another_admin_starts_appears_in_an_open_list(live, cluster, monkeypatch):
    monkeypatch.setattr("scheduler_core.services.simulations._enqueue", lambda pk: None)
    old = backend(
        lambda: Simulation.objects.create(
            name="old run", source="live", created_by=cluster["admin"]
        )
    )
    page = live.page("admin")
    page.goto(f"{live.url}/simulations/")
    expect(page.locator(f"tr[data-simulation='{old.pk}']")).to_be_visible()
    live.wait_live(page)
    page.evaluate("window.__sameDocument = true")

    # Another admin (a department's) starts a run: it is listed at the top, queued.
    simulation = backend(
        simulation_create, user=cluster["dept_admin"], name="vision quota 4", source="live"
    )
    row = page.locator("#simulation-rows, #simulation-new-rows").locator("tr").first
    expect(row).to_have_attribute("data-simulation", str(simulation.pk))
    expect(row).to_contain_text("vision quota 4")
    cell = page.locator(f"#simulation-status-{simulation.pk}")
    expect(cell).to_contain_text("Queued")
    # ... and its progress is followed like that of the runs drawn with the page.
    backend(simulation_run, simulation_id=simulation.pk)  # the worker
    expect(cell).to_contain_text("Succeeded")

    # Ticked to compare, it stays ticked when the next run (from another tab) arrives.
    tick = page.locator(f"tr[data-simulation='{simulation.pk}'] input[type=checkbox]")
    tick.check()
    after = backend(simulation_create, user=cluster["admin"], name="infra plan", source="live")
    expect(row).to_have_attribute("data-simulation", str(after.pk))
    expect(tick).to_be_checked()
    expect(page.locator("[data-live-waiting]")).to_have_count(0)  # nothing held back
    assert page.evaluate("window.__sameDocument") is True  # no reload


def test_an_admin_replays_a_trace_and_reads_it_side_by_side(live, cluster, monkeypatch, tmp_path):
    monkeypatch.setattr("scheduler_core.services.simulations._enqueue", lambda pk: None)
    trace = tmp_path / "philly-day.csv"
    trace.write_text(TRACE_CSV)
    page = live.page("admin")
    page.goto(f"{live.url}/simulations/")
    trace_part = page.locator("[data-source-fields=trace]")
    expect(trace_part).to_be_hidden()  # the live copy is chosen: only its fields show
    page.check("input[name=source][value=trace]")
    expect(trace_part).to_be_visible()
    expect(page.locator("#change-rows")).to_be_hidden()
    expect(page.locator("#id_horizon")).to_be_hidden()
    page.fill("#id_name", "philly day")
    page.set_input_files("#id_trace_file", str(trace))
    page.fill("#id_trace_start", "2017-10-25T19:00")
    page.fill("#id_trace_hours", "2")
    page.fill("#id_trace_nodes", "4")
    page.check("input[name=trace_settings][value=reclaim_weighs_lost_work]")
    page.click("button:has-text('Start')")
    expect(page.locator("h1")).to_have_text("philly day")
    simulation = Simulation.objects.get()
    assert simulation.trace_options["config"] == {
        "profile": "lab",
        "reclaim_weighs_lost_work": True,
    }

    live.wait_live(page)
    backend(simulation_run, simulation_id=simulation.pk)  # the worker
    expect(page.locator("[data-summary]")).to_contain_text(
        "Fairway ran the window's 6 jobs to their end in"
    )
    figures = page.locator("[data-trace-figures]")
    expect(figures.locator("thead")).to_contain_text("FIFO with backfill")
    expect(figures).to_contain_text("lost GPU-h (% of work)")
    chart = page.locator("[data-trace-chart=Fairway] [data-chart-legend]")
    expect(chart).to_contain_text("GPUs asked by waiting jobs")
    expect(chart).to_contain_text("capacity (32)")
