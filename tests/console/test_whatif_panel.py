"""The quotas page's what-if panel: who saving a quota change would preempt or start now
(the scheduler's next cycles on a copy of the live cluster), and the fair shares it moves."""

from __future__ import annotations

import re

import pytest

from scheduler_core.loop.cycle import run_cycle
from scheduler_core.models import Quota, Workload
from tests import factories
from tests.console.quota_rows import HTMX, row_data, row_url
from tests.factories import running_workload


def settle() -> None:
    """Run scheduling cycles until one decides nothing (the live cluster at rest)."""
    for _ in range(10):
        report = run_cycle()
        if not report.outcome.applied:
            return
    raise AssertionError("the scheduler did not settle")


def status(name: str) -> str:
    return Workload.objects.get(name=name).status


@pytest.fixture
def busy(cluster, submit):
    """a100 (16 GPUs) full: vision runs 8 GPUs, infra (department ops) 8 in two workloads,
    one of them over its quota of 4; nlp, with no quota in a100, waits with 4 GPUs. The
    research department has no quota row, so it deserves what its projects do (8)."""
    Quota.objects.filter(project=cluster["nlp"]).delete()
    Quota.objects.filter(department=cluster["dept"]).delete()
    submit("vision", "vision-train", gpus=8)
    submit("infra", "infra-a", gpus=4)
    submit("infra", "infra-b", gpus=4)
    settle()
    submit("nlp", "nlp-wait", gpus=4)
    settle()
    assert [status(n) for n in ("vision-train", "infra-a", "infra-b", "nlp-wait")] == [
        "running", "running", "running", "pending",
    ]  # fmt: skip
    return cluster


def whatif(client, cluster, **values) -> str:
    nlp, pool = cluster["nlp"], cluster["pool"]
    response = client.post(
        row_url("quota_whatif", "project", nlp, pool),
        row_data("project", nlp, pool, **values),
        **HTMX,
    )
    assert response.status_code == 200
    return response.content.decode()


def sentence(html: str, marker: str) -> str:
    """The text of the panel's paragraph marked `marker`, tags removed."""
    paragraph = html.split(marker, 1)[1].split("</p>", 1)[0]
    return " ".join(re.sub(r"<[^>]+>", "", paragraph.split(">", 1)[1]).split())


def test_the_panel_names_who_the_change_preempts_and_starts_now(client_for, busy):
    html = whatif(client_for("admin"), busy, gpus=4)
    assert sentence(html, "data-whatif-now") == (
        "Saving it now would preempt infra-b (infra, 4 GPUs), and start nlp-wait (nlp, 4 GPUs)."
    )
    # the longer run, from the same engine runs: research's and nlp's shares grow by what
    # ops and infra give up (16 GPUs: 12 deserved by research, 4 by ops)
    assert sentence(html, "data-whatif-later") == (
        "From then on, fair shares would be research in a100 10 → 12 GPUs, "
        "ops in a100 6 → 4 GPUs, nlp in a100 2 → 4 GPUs and infra in a100 6 → 4 GPUs."
    )
    assert 'id="w-project-' in html and "whatif-row" in html  # the row below the edited one
    assert Quota.objects.filter(project=busy["nlp"]).count() == 0  # nothing saved
    assert status("infra-b") == "running"


def test_a_department_admin_is_not_told_the_names_of_other_departments(client_for, busy):
    html = whatif(client_for("dept_admin"), busy, gpus=4)
    assert sentence(html, "data-whatif-now") == (
        "Saving it now would preempt a workload of another project (4 GPUs), "
        "and start nlp-wait (nlp, 4 GPUs)."
    )
    assert sentence(html, "data-whatif-later") == (
        "From then on, fair shares would be research in a100 10 → 12 GPUs, another "
        "department in a100 6 → 4 GPUs, nlp in a100 2 → 4 GPUs and another project in a100 "
        "6 → 4 GPUs."
    )
    assert "infra" not in html and "ops" not in html


def test_what_the_panel_names_is_what_saving_does(client_for, busy):
    client = client_for("dept_admin")
    html = whatif(client, busy, gpus=4)
    assert "preempt a workload of another project (4 GPUs)" in sentence(html, "data-whatif-now")
    nlp, pool = busy["nlp"], busy["pool"]
    saved = client.post(
        row_url("quota_save", "project", nlp, pool), row_data("project", nlp, pool, gpus=4), **HTMX
    ).content.decode()
    assert 'id="w-project-' in saved and 'hx-swap-oob="true"' in saved  # the panel is cleared
    settle()
    assert status("infra-b") == "pending" and status("nlp-wait") == "running"


def test_a_change_that_moves_nothing_says_so_in_one_sentence(client_for, busy):
    html = whatif(client_for("admin"), busy, gpus=1)
    assert sentence(html, "data-whatif-now") == (
        "Saving it now would preempt, move, shrink, grow and start nothing."
    )
    assert sentence(html, "data-whatif-later") == (
        "From then on, fair shares would be research in a100 10 → 11 GPUs, ops in a100 6 → 5 "
        "GPUs, nlp in a100 2 → 3 GPUs and infra in a100 6 → 5 GPUs."
    )


def test_bad_values_are_explained_instead_of_run(client_for, busy):
    html = whatif(client_for("admin"), busy, gpus="lots")
    assert "Fix the values in the row first" in html


def test_the_panel_costs_a_constant_number_of_queries(
    client_for, busy, submit, django_assert_num_queries
):
    client = client_for("admin")
    with django_assert_num_queries(QUERIES) as captured:
        whatif(client, busy, gpus=4)
    for i in range(5):
        submit("vision", f"more-{i}", gpus=1)
    with django_assert_num_queries(len(captured)):
        whatif(client, busy, gpus=4)


QUERIES = 19
"""The session and user (2), the edited row: its pool, owner and figures (4), the live
snapshot as the loop reads it (11, with savepoints: the nodes in two), the viewer's
projects and departments (2); the engine itself queries nothing."""


@pytest.fixture
def fragmented(cluster):
    """a100's two 8-GPU nodes each half used (vision's 4 GPUs on gpu-1, infra's 4 on
    gpu-2); nlp may not use a100 (limit 0) and waits with one 8-GPU pod, which fits no node
    until one is emptied; vision also runs an elastic workload of 2 one-GPU pods on gpu-1."""
    gpu1, gpu2 = cluster["nodes"]
    running_workload(cluster["vision"], [gpu1], name="vision-a", gpus=4)
    running_workload(cluster["infra"], [gpu2], name="infra-b", gpus=4)
    Quota.objects.filter(project=cluster["nlp"]).update(gpus=0, limit_gpus=0)
    factories.workload(cluster["nlp"], name="wide", gpus=8)
    settle()
    assert status("wide") == "pending"
    return cluster


def test_the_panel_names_the_workloads_save_would_move(client_for, fragmented):
    """Save would start nlp's 8-GPU pod by moving a half-node workload to the other node:
    the panel says which one, and from where to where (issue 34, item 5)."""
    html = whatif(client_for("admin"), fragmented, gpus=8)
    now = sentence(html, "data-whatif-now")
    assert re.fullmatch(
        r"Saving it now would move (vision-a \(vision, 4 GPUs\) from gpu-1 to gpu-2|"
        r"infra-b \(infra, 4 GPUs\) from gpu-2 to gpu-1), and start wide \(nlp, 8 GPUs\)\.",
        now,
    ), now


def test_the_panel_names_the_workloads_save_would_shrink(client_for, cluster, submit):
    """infra's elastic workload (4 pods of 2 GPUs, at least 2) holds 4 GPUs over infra's
    quota; giving nlp a quota takes them back by shrinking it rather than stopping it, and
    the panel says so (issue 34, item 5)."""
    Quota.objects.filter(project=cluster["nlp"]).delete()
    Quota.objects.filter(department=cluster["dept"]).delete()
    submit("vision", "vision-train", gpus=8)
    submit("infra", "elastic", gpus=2, pods=4, min_pods=2)
    settle()
    submit("nlp", "nlp-wait", gpus=4)
    settle()
    assert status("elastic") == "running" and status("nlp-wait") == "pending"

    html = whatif(client_for("admin"), cluster, gpus=4)
    assert sentence(html, "data-whatif-now") == (
        "Saving it now would shrink elastic (infra, 8 GPUs) from 4 to 2 pods, "
        "and start nlp-wait (nlp, 4 GPUs)."
    )
