"""The quotas page's what-if panel in a browser: it names the workload a change would
preempt, right below the edited row, and Save then preempts that same workload."""

from __future__ import annotations

from playwright.sync_api import expect

from scheduler_core.models import Workload
from tests.console.browser.conftest import fill_a100_with_nlp_waiting, settle


def test_the_panel_names_the_workload_that_save_then_preempts(live, cluster):
    fill_a100_with_nlp_waiting(cluster)
    assert Workload.objects.get(name="infra-b").status == "running"

    page = live.page("admin")
    page.goto(f"{live.url}/quotas/")
    nlp, pool = cluster["nlp"], cluster["pool"]
    key = f"project-{nlp.pk}-{pool.pk}"
    row = page.locator(f"#q-{key}")
    row.locator(f"#id_{key}-gpus").fill("4")
    row.locator("button:has-text('What if?')").click()

    panel = page.locator(f"#q-{key} + tr.whatif-row")  # right below the edited row
    now = panel.locator("[data-whatif-now]")
    expect(now).to_contain_text("preempt infra-b (infra, 4 GPUs)")
    expect(now).to_contain_text("start nlp-wait (nlp, 4 GPUs)")
    expect(panel.locator("[data-whatif-later]")).to_contain_text("nlp in a100 2 → 4 GPUs")
    assert Workload.objects.get(name="infra-b").status == "running"  # nothing saved yet

    page.locator(f"#q-{key}").locator("button:has-text('Save')").click()
    expect(page.locator(f"#q-{key}")).to_contain_text("Saved.")
    expect(page.locator(f"#w-{key}")).to_be_hidden()  # the panel of the old values is gone
    settle()
    assert Workload.objects.get(name="infra-b").status == "pending"
    assert Workload.objects.get(name="nlp-wait").status == "running"
    page.goto(f"{live.url}/workloads/{Workload.objects.get(name='infra-b').pk}/")
    expect(page.locator("#workload-live [data-cell=status]").first).to_have_text("Pending")
