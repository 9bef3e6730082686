"""`manage.py run_cycle`: run one scheduling cycle now and say what it did."""

from django.core.management.base import BaseCommand

from scheduler_core.loop.cycle import run_cycle


class Command(BaseCommand):
    help = "Run one scheduling cycle now (waits for nothing: skips if one is running)."

    def handle(self, *args, **options):
        report = run_cycle()
        if not report.ran:
            self.stdout.write("A cycle is running in another worker; a follow-up is queued.")
            return
        record = report.record
        applied = ", ".join(f"{n} {kind}" for kind, n in sorted(record.details["applied"].items()))
        self.stdout.write(
            f"Cycle took {record.duration_seconds * 1000:.0f} ms: "
            f"{record.decisions} decision(s) applied ({applied or 'nothing to do'}), "
            f"{record.dropped_decisions} dropped, {report.completed} completed; "
            f"{record.running} running, {record.pending} pending."
        )
