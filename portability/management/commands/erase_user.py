from django.core.management.base import BaseCommand

from portability import services
from portability.management.people import add_person_arguments, person


class Command(BaseCommand):
    help = (
        "Erase a user's data (what DELETE /api/v1/me/data does for them): comments become placeholders or are "
        "removed (each site's setting), likes are withdrawn with counts kept right, IP addresses and user agents go, "
        "the account is closed. Audited. The user: an id or username, --email, --sso SITE:ID, or --name (lists "
        "candidates, erases nobody)."
    )

    def add_arguments(self, parser):
        add_person_arguments(parser)

    def handle(self, *args, **options):
        report = services.user_erase(user=person(options), actor=None)
        for name, value in report.as_dict().items():
            self.stdout.write(f"{name}: {value}")
