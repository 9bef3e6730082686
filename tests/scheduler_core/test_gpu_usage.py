"""GPU usage history: agent samples attributed to the workloads that held each GPU, rolled
up into minutes and hours, pruned, and read back per scope as each user may see them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from scheduler_core.models import GpuUsageRollup
from scheduler_core.selectors.gpu_usage import WINDOWS, UsageScope, gpu_usage_history
from scheduler_core.services.gpu_usage import gpu_usage_prune, gpu_usage_roll_up
from scheduler_core.usage_buckets import HOUR, MINUTE
from tests.usage_samples import usage_story


@pytest.fixture
def story(cluster, settings):
    story = usage_story(cluster["vision"], cluster["nlp"], settings)
    gpu_usage_roll_up()
    return story


def _rows(story, resolution, start):
    rows = GpuUsageRollup.objects.filter(resolution=resolution, start=start, node=story.node)
    return {(r.index, r.workload.name if r.workload else None): r for r in rows}


def test_a_minute_of_samples_is_shared_among_the_runs_that_held_each_gpu(story):
    rows = _rows(story, MINUTE, story.start + timedelta(minutes=10))
    assert set(rows) == {(0, "train"), (1, "eval"), (1, None)}
    train, evaluation, unheld = rows[(0, "train")], rows[(1, "eval")], rows[(1, None)]
    assert (train.held_gpus, train.used_gpus) == pytest.approx((1.0, 0.9))
    assert train.memory_used_mib == pytest.approx(40960) and train.samples == 2
    assert train.project.name == "vision" and train.pool.name == "local"
    # half of GPU 1 is eval's, the other half nobody's: the device's use is split too
    assert (evaluation.held_gpus, evaluation.used_gpus) == pytest.approx((0.5, 0.02))
    assert (unheld.held_gpus, unheld.used_gpus) == pytest.approx((0.0, 0.02))


def test_a_gpu_is_nobodys_once_its_run_ended(story):
    rows = _rows(story, MINUTE, story.start + timedelta(minutes=70))
    assert (0, "train") not in rows
    assert rows[(0, None)].held_gpus == 0.0


def test_hours_are_rolled_up_from_the_minutes(story):
    first, second = (_rows(story, HOUR, story.start + timedelta(hours=h)) for h in (0, 1))
    assert (first[(0, "train")].held_gpus, first[(0, "train")].used_gpus) == pytest.approx(
        (1.0, 0.9)
    )
    assert first[(1, "eval")].held_gpus == pytest.approx(0.5)
    assert first[(1, "eval")].samples == 120
    assert (0, "train") not in second


def test_rolling_up_again_writes_nothing_twice(story):
    count = GpuUsageRollup.objects.count()
    assert gpu_usage_roll_up() == 0
    assert GpuUsageRollup.objects.count() == count


def test_minutes_are_pruned_before_hours(story, settings):
    settings.GPU_USAGE_MINUTE_RETENTION = 2.5 * 3600
    gpu_usage_prune(now=timezone.now())
    minutes = GpuUsageRollup.objects.filter(resolution=MINUTE)
    assert not minutes.filter(start__lt=timezone.now() - timedelta(hours=2.5)).exists()
    assert minutes.exists()
    assert GpuUsageRollup.objects.filter(resolution=HOUR, start=story.start).exists()


def _point(history, at):
    return next(p for p in history.points if p.start == at)


def test_a_pool_shows_gpus_held_against_gpus_used_and_the_idlest_holders(story, cluster):
    pool = story.node.pool
    history = gpu_usage_history(
        user=cluster["admin"], scope=UsageScope(pool=pool), window=WINDOWS["7d"],
        now=timezone.now(),
    )  # fmt: skip
    first_hour = _point(history, story.start)
    assert (first_hour.held_gpus, first_hour.used_gpus) == pytest.approx((1.5, 0.94))
    assert first_hour.memory_used_mib == pytest.approx(40960 + 8192)
    assert first_hour.utilization == pytest.approx(100 * 0.94 / 1.5)
    assert [h.workload_name for h in history.holders] == ["eval", "train"]
    evaluation = history.holders[0]
    assert (evaluation.gpu_hours, evaluation.utilization) == pytest.approx((1.0, 4.0))
    assert evaluation.idle_gpu_hours == pytest.approx(0.96)


def test_a_day_is_drawn_in_quarter_hours_from_the_minutes(story, cluster):
    history = gpu_usage_history(
        user=cluster["admin"], scope=UsageScope(workload=story.train), window=WINDOWS["24h"],
        now=timezone.now(),
    )  # fmt: skip
    assert history.resolution == MINUTE
    quarter = _point(history, story.start + timedelta(minutes=15))
    assert (quarter.held_gpus, quarter.used_gpus) == pytest.approx((1.0, 0.9))
    assert _point(history, story.start + timedelta(minutes=75)).held_gpus == 0.0


def test_a_researcher_sees_only_the_usage_of_projects_she_may_see(story, cluster):
    history = gpu_usage_history(
        user=cluster["nlp_researcher"], scope=UsageScope(pool=story.node.pool),
        window=WINDOWS["7d"], now=timezone.now(),
    )  # fmt: skip
    assert [h.workload_name for h in history.holders] == ["eval"]
    assert _point(history, story.start).held_gpus == pytest.approx(0.5)
    outsider = gpu_usage_history(
        user=cluster["outsider"], scope=UsageScope(), window=WINDOWS["7d"], now=timezone.now()
    )
    assert outsider.holders == []
    assert _point(outsider, story.start).held_gpus == 0.0


def test_the_beats_task_rolls_the_samples_up(cluster, settings):
    from config.settings import CELERY_BEAT_SCHEDULE
    from scheduler_core.runtime.tasks import gpu_usage_roll_up_task

    assert CELERY_BEAT_SCHEDULE["gpu-usage-roll-up"]["task"] == gpu_usage_roll_up_task.name
    story = usage_story(cluster["vision"], cluster["nlp"], settings)
    gpu_usage_roll_up_task()
    assert GpuUsageRollup.objects.filter(resolution=HOUR, start=story.start).exists()
    assert GpuUsageRollup.objects.filter(resolution=MINUTE).exists()


def test_a_chart_takes_three_queries_over_hundreds_of_rows(
    story, cluster, django_assert_num_queries
):
    assert GpuUsageRollup.objects.filter(resolution=MINUTE).count() > 300
    with django_assert_num_queries(3):  # the rows grouped by time, the holders, the progress
        gpu_usage_history(
            user=cluster["nlp_researcher"], scope=UsageScope(pool=story.node.pool),
            window=WINDOWS["24h"], now=timezone.now(),
        )  # fmt: skip
