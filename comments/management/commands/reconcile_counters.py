from django.core.management.base import BaseCommand

from comments.models import Subject
from comments.services import subject_reconcile_counters


class Command(BaseCommand):
    help = "Recompute the denormalized counters (subject and comment) from the rows."

    def add_arguments(self, parser):
        parser.add_argument("--subject", type=int, action="append", help="subject id (repeatable); default all")

    def handle(self, *args, **options):
        ids = options["subject"] or list(Subject.objects.order_by("pk").values_list("pk", flat=True))
        fixed = 0
        for subject_id in ids:
            report = subject_reconcile_counters(subject_id=subject_id)
            if report.fixed_subject or report.fixed_comments:
                fixed += 1
                self.stdout.write(
                    f"subject {subject_id}: repaired subject counters={report.fixed_subject}, "
                    f"comments={report.fixed_comments}"
                )
        self.stdout.write(f"checked {len(ids)} subject(s), repaired {fixed}")
