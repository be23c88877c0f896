from django.core.management.base import BaseCommand

from likes.services import likes_flush


class Command(BaseCommand):
    help = "Drain the queued like actions into the database once, synchronously."

    def add_arguments(self, parser):
        parser.add_argument("--max-seconds", type=float, default=None, help="stop taking batches after this long")

    def handle(self, *args, max_seconds, **options):
        report = likes_flush(max_seconds=max_seconds)
        self.stdout.write(
            f"flushed {report.events} event(s) of {report.subjects} subject(s) in {report.batches} batch(es), "
            f"{report.changed_comments} comment count(s) changed, {report.stale_dropped} stale state(s) dropped, "
            f"{report.seconds:.2f} s"
        )
