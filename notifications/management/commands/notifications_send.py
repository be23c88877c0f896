from django.core.management.base import BaseCommand

from notifications import mail


class Command(BaseCommand):
    help = (
        "Send the queued notification emails once, synchronously (what the beat task "
        "notifications.send_emails does); --digests also sends the daily digests now."
    )

    def add_arguments(self, parser):
        parser.add_argument("--digests", action="store_true", help="also send each reader's waiting daily digest")

    def handle(self, *args, digests, **options):
        sent = mail.emails_send()
        self.stdout.write(f"sent {sent} email(s)")
        if digests:
            self.stdout.write(f"sent {mail.digests_send()} digest(s)")
