"""Node pools and their nodes in the console: everyone reads them, system admins manage them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from scheduler_core.choices import NodeState, WorkloadStatus
from scheduler_core.models import Node, NodePool
from tests import factories

POOL = {
    "name": "h100",
    "description": "",
    "policy": "fairshare",
    "placement": "spread",
    "profile": "custom",
    "preemption": "on",
    "max_consolidation_evaluations": 100,
    "max_reclaims_per_cycle": "",
    "max_preemptions_per_cycle": 10,
    "min_guaranteed_runtime": 600,
    "reclaim_weighs_lost_work": "on",
    "reclaim_lost_work_ratio": 1,
    "reserve_for_gangs": "on",
    "consolidation_within_quota": "on",
    "max_preemptions_per_workload": 2,
    "fairshare_mode": "time_based",
    "time_based_window": 86400,
    "time_based_half_life": 3600,
    "time_based_k": 2,
    "backend": "simulated",
    "grace_period": 30,
}


def pool_url(name, pool):
    return reverse(f"console:{name}", args=[pool.pk])


def test_a_system_admin_creates_a_pool_and_a_node(client_for, cluster):
    client = client_for("admin")
    response = client.post(reverse("console:pool_create"), POOL)
    pool = NodePool.objects.get(name="h100")
    assert response["Location"] == pool_url("pool_detail", pool)
    assert (pool.policy, pool.placement, pool.preemption, pool.consolidation) == (
        "fairshare",
        "spread",
        True,
        False,
    )
    assert (pool.max_reclaims_per_cycle, pool.max_preemptions_per_cycle) == (None, 10)
    assert (pool.min_guaranteed_runtime, pool.fairshare_mode, pool.time_based_k) == (
        600,
        "time_based",
        2,
    )
    assert pool.reclaim_weighs_lost_work and pool.reserve_for_gangs
    assert pool.consolidation_within_quota
    assert pool.max_preemptions_per_workload == 2
    assert not pool.consolidation_weighs_lost_work

    response = client.post(
        pool_url("node_create", pool),
        {
            "name": "h100-1",
            "gpu_count": 4,
            "gpu_model": "H100",
            "cpu": 96,
            "memory": 1024,
            "labels": "gpu=h100\nzone=b",
        },
        follow=True,
    )
    node = Node.objects.get(name="h100-1")
    assert (node.pool, node.gpu_count, node.labels) == (pool, 4, {"gpu": "h100", "zone": "b"})
    html = response.content.decode()
    assert "Added node h100-1 to h100." in html and 'data-node="h100-1"' in html


def test_pool_settings_errors_are_shown_next_to_the_fields(client_for, cluster):
    client = client_for("admin")
    html = client.post(reverse("console:pool_create"), {**POOL, "name": "a100"}).content.decode()
    assert "a pool named &#x27;a100&#x27; already exists" in html
    html = client.post(
        reverse("console:pool_create"), {**POOL, "time_based_half_life": 0}
    ).content.decode()
    half_life = html.split('data-field="time_based_half_life"', 1)[1].split("</ul>", 1)[0]
    assert 'class="errors"' in half_life and not NodePool.objects.filter(name="h100").exists()
    node = {"name": "gpu-1", "gpu_count": 8, "cpu": 0, "memory": 0}
    html = client.post(pool_url("node_create", cluster["pool"]), node).content.decode()
    assert "a node named &#x27;gpu-1&#x27; already exists" in html
    html = client.post(
        pool_url("node_create", cluster["pool"]), {**node, "name": "gpu-9", "labels": "zone"}
    ).content.decode()
    labels = html.split('data-field="labels"', 1)[1].split("</ul>", 1)[0]
    assert "write key=value, got &#x27;zone&#x27;" in labels


def test_a_system_admin_changes_a_pools_settings(client_for, cluster):
    pool = cluster["pool"]
    html = client_for("admin").get(pool_url("pool_detail", pool)).content.decode()
    assert 'id="pool-settings"' in html and 'name="min_guaranteed_runtime"' in html
    assert 'name="grace_period"' in html and 'name="backend"' in html
    response = client_for("admin").post(
        pool_url("pool_settings", pool), {**POOL, "consolidation": "on"}
    )
    assert response.status_code == 302
    pool.refresh_from_db()
    assert (pool.policy, pool.min_guaranteed_runtime, pool.consolidation) == (
        "fairshare",
        600,
        True,
    )


def test_a_slurm_pools_own_settings_are_set_in_the_console(client_for, cluster):
    pool = cluster["pool"]
    client = client_for("admin")
    html = client.get(pool_url("pool_detail", pool)).content.decode()
    assert "Slurm pools only" in html and 'name="slurm__partition"' in html
    slurm = {**POOL, "backend": "slurm", "slurm__partition": "gpu-a", "slurm__account": "lab",
             "slurm__preempt_signal": "USR1", "slurm__output_dir": ""}  # fmt: skip
    assert client.post(pool_url("pool_settings", pool), slurm).status_code == 302
    pool.refresh_from_db()
    assert pool.backend == "slurm"
    assert pool.backend_settings == {"partition": "gpu-a", "account": "lab",
                                     "preempt_signal": "USR1"}  # fmt: skip
    # the form shows what is set; a cleared field goes back to its default
    html = client.get(pool_url("pool_detail", pool)).content.decode()
    assert 'name="slurm__partition" value="gpu-a"' in html.replace("\n", " ")
    client.post(pool_url("pool_settings", pool), {**slurm, "slurm__account": ""})
    pool.refresh_from_db()
    assert pool.backend_settings == {"partition": "gpu-a", "preempt_signal": "USR1"}
    # read-only users see them beside the backend
    html = client_for("viewer").get(pool_url("pool_detail", pool)).content.decode()
    assert "partition gpu-a, preempt_signal USR1" in html


def test_wrong_backend_settings_are_shown_next_to_their_fields(client_for, cluster):
    pool = cluster["pool"]
    client = client_for("admin")
    bad = {**POOL, "backend": "slurm", "slurm__preempt_signal": "KILL",
           "slurm__partition": "a b"}  # fmt: skip
    html = client.post(pool_url("pool_settings", pool), bad).content.decode()
    signal = html.split('data-field="slurm__preempt_signal"', 1)[1].split("</ul>", 1)[0]
    assert "must be one of TERM, INT, USR1, USR2, HUP, QUIT, got" in signal
    partition = html.split('data-field="slurm__partition"', 1)[1].split("</ul>", 1)[0]
    assert 'class="errors"' in partition
    # a Slurm setting on a pool that does not run on Slurm is refused, not dropped
    html = client.post(
        pool_url("pool_settings", pool), {**POOL, "slurm__partition": "gpu-a"}
    ).content.decode()
    partition = html.split('data-field="slurm__partition"', 1)[1].split("</ul>", 1)[0]
    assert "only Slurm pools use this" in partition
    pool.refresh_from_db()
    assert (pool.backend, pool.backend_settings) == ("simulated", {})


def test_the_profile_is_one_setting_and_the_pool_page_says_what_it_changes(client_for, cluster):
    client = client_for("admin")
    client.post(reverse("console:pool_create"), {**POOL, "profile": "lab"})
    pool = NodePool.objects.get(name="h100")
    # the profile's settings win over the form's fields it names; the others are kept
    assert (pool.profile, pool.consolidation_weighs_lost_work, pool.placement) == (
        "lab",
        True,
        "spread",
    )
    html = client.get(pool_url("pool_detail", pool)).content.decode()
    shown = html.split('id="pool-profile"', 1)[1].split("</div>", 1)[0]
    assert "Policy profile: <strong>lab</strong>" in shown
    assert "What it changes from KAI's settings" in shown
    assert "Preemptions per workload: no bound &rarr; 2" in shown
    assert "Hold a preemption loop after: no bound &rarr; 3" in shown
    client.post(pool_url("pool_settings", pool), {**POOL, "profile": "kai"})
    pool.refresh_from_db()
    assert (pool.profile, pool.reclaim_weighs_lost_work, pool.max_preemptions_per_workload) == (
        "kai",
        False,
        None,
    )
    html = client.get(pool_url("pool_detail", pool)).content.decode()
    assert "exactly KAI-Scheduler's settings." in html


@pytest.mark.parametrize("role", ["dept_admin", "researcher", "viewer"])
def test_others_read_pools_and_nodes_but_change_nothing(client_for, cluster, role):
    pool = cluster["pool"]
    client = client_for(role)
    listing = client.get(reverse("console:pools")).content.decode()
    assert 'data-pool="a100"' in listing and 'id="pool-create"' not in listing
    html = client.get(pool_url("pool_detail", pool)).content.decode()
    assert 'data-node="gpu-1"' in html and "Quota / fairshare" in html
    for hidden in ("Cordon", "Drain", "Delete", 'id="node-create"', 'name="policy"'):
        assert hidden not in html
    node = cluster["nodes"][0]
    posts = [
        (reverse("console:pool_create"), POOL),
        (pool_url("pool_settings", pool), POOL),
        (pool_url("node_create", pool), {"name": "n9", "gpu_count": 1, "cpu": 0, "memory": 0}),
        (pool_url("pool_delete", pool), {}),
        (reverse("console:node_delete", args=[node.pk]), {}),
        (reverse("console:pool_node_action", args=[node.pk, "cordon"]), {}),
    ]
    for url, data in posts:
        assert client.post(url, data).status_code == 403
    assert NodePool.objects.count() == 1 and Node.objects.count() == 2
    node.refresh_from_db()
    assert node.state == NodeState.READY


def test_cordon_drain_and_uncordon_from_the_pool_page(client_for, cluster):
    node = cluster["nodes"][0]
    workload = factories.running_workload(cluster["vision"], [node])
    client = client_for("admin")
    html = client.get(pool_url("pool_detail", cluster["pool"])).content.decode()
    row = html.split('data-node="gpu-1"', 1)[1].split("</tr>", 1)[0]
    assert "Cordon" in row and "Drain" in row
    url = reverse("console:pool_node_action", args=[node.pk, "drain"])
    response = client.post(url)
    assert response["Location"] == pool_url("pool_detail", cluster["pool"])
    node.refresh_from_db()
    workload.refresh_from_db()
    assert (node.state, workload.status) == (NodeState.CORDONED, WorkloadStatus.PENDING)
    client.post(reverse("console:pool_node_action", args=[node.pk, "uncordon"]))
    node.refresh_from_db()
    assert node.state == NodeState.READY


def test_deleting_a_node_with_pods_is_refused_until_drained(client_for, cluster):
    node = cluster["nodes"][0]
    factories.running_workload(cluster["vision"], [node])
    client = client_for("admin")
    url = reverse("console:node_delete", args=[node.pk])
    assert "It still runs 1 pod: deleting is refused" in client.get(url).content.decode()
    assert "still runs pods: drain it first" in client.post(url).content.decode()
    client.post(reverse("console:pool_node_action", args=[node.pk, "drain"]))
    assert client.post(url)["Location"] == pool_url("pool_detail", cluster["pool"])
    assert not Node.objects.filter(pk=node.pk).exists()


def test_deleting_a_pool_says_what_it_does(client_for, cluster):
    client = client_for("admin")
    url = pool_url("pool_delete", cluster["pool"])
    html = client.get(url).content.decode()
    assert "It still has 2 nodes: deleting is refused" in html
    assert "quota in a100 (5 quotas) is deleted with it" in html
    assert "still has nodes" in client.post(url).content.decode()
    empty = factories.pool("spare")
    assert client.post(pool_url("pool_delete", empty))["Location"] == reverse("console:pools")
    assert not NodePool.objects.filter(name="spare").exists()


def test_a_system_admin_creates_a_join_token_seen_once_and_revokes_it(client_for, cluster):
    from scheduler_core.models import JoinToken

    client, pool = client_for("admin"), cluster["pool"]
    html = client.post(pool_url("join_token_create", pool), {"description": "rack 4"})
    text = html.content.decode()
    token = JoinToken.objects.get(pool=pool)
    assert "fairway-agent --server http://testserver --join-token fwj_" in text
    assert token.description == "rack 4"
    again = client.get(pool_url("pool_detail", pool)).content.decode()
    assert "--join-token" not in again and f"{token.prefix}…" in again
    response = client.post(reverse("console:join_token_revoke", args=[token.pk]))
    assert response["Location"] == pool_url("pool_detail", pool)
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_only_system_admins_create_join_tokens(client_for, cluster):
    from scheduler_core.models import JoinToken

    response = client_for("researcher").post(pool_url("join_token_create", cluster["pool"]))
    assert response.status_code in (302, 403)
    assert not JoinToken.objects.exists()
