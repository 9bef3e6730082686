"""`manage.py loadtest`: replay Kueue's published baseline load on the live scheduler
(benchmarks/loadtest.py says what it does and prints)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from benchmarks.loadtest import PROFILES, LoadTest, LoadTestError
from scheduler_core.engine.profiles import PROFILE_KAI
from scheduler_core.engine.profiles import PROFILES as PROFILES_OF_POOLS


class Command(BaseCommand):
    help = (
        "Replay Kueue's baseline load (15,000 workloads) or its large-scale load (50,000 "
        "workloads, 1,000 queues) live and report the figures."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--profile", choices=sorted(PROFILES), default="baseline",
            help="which of Kueue's loads (default: baseline)",
        )  # fmt: skip
        parser.add_argument(
            "--scale", type=float, default=1.0,
            help="fraction of each class's jobs (0.1 for a quick run); the cluster stays",
        )  # fmt: skip
        parser.add_argument(
            "--tick", type=float, default=1.0, help="ask for a cycle this often (seconds)"
        )
        parser.add_argument(
            "--no-worker", action="store_true",
            help="use running workers instead of starting one (they must serve the queue)",
        )  # fmt: skip
        parser.add_argument(
            "--pool-profile", choices=PROFILES_OF_POOLS, default=PROFILE_KAI,
            help="the load's pool's policy profile (default: kai, exactly KAI's settings, "
            "as every figure in docs/loadtest.md; lab: what a new pool gets)",
        )  # fmt: skip
        parser.add_argument("--timeout", type=float, default=900, help="give up after (s)")
        parser.add_argument("--keep", action="store_true", help="keep the load's data after")

    def handle(self, *args: Any, **opts: Any) -> None:
        load_test = LoadTest(
            write=self.stdout.write,
            warn=self.stderr.write,
            profile=PROFILES[opts["profile"]],
            pool_profile=opts["pool_profile"],
        )
        try:
            load_test.run(
                scale=opts["scale"], tick=opts["tick"], start_worker=not opts["no_worker"],
                timeout=opts["timeout"], keep=opts["keep"],
            )  # fmt: skip
        except LoadTestError as error:
            raise CommandError(str(error)) from error
