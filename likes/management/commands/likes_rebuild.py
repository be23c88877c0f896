from django.core.management.base import BaseCommand

from likes.services import like_counts_reconcile, like_state_rebuild


class Command(BaseCommand):
    help = (
        "Flush queued likes, recompute like counts from the like rows, and rebuild the Redis like "
        "state from the database (of one subject, or all)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--subject", type=int, default=None, help="only this subject id")

    def handle(self, *args, subject, **options):
        built = like_state_rebuild(subject_id=subject)
        if built is None:
            # No Redis: the database is the only state; its counts are still worth checking.
            fixed = like_counts_reconcile(subject_id=subject)
            self.stdout.write(f"no Redis configured or reachable; {fixed} like count(s) fixed in the database")
            return
        self.stdout.write(f"rebuilt the Redis like state of {built} comment(s)")
