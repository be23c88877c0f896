from django.core.management.base import BaseCommand

from portability import services

from .export_user_data import find_user


class Command(BaseCommand):
    help = (
        "Erase a user's data (what DELETE /api/v1/me/data does for them): comments become placeholders or are "
        "removed (each site's setting), likes are withdrawn with counts kept right, IP addresses and user agents go, "
        "the account is closed. Audited."
    )

    def add_arguments(self, parser):
        parser.add_argument("user", help="user id or username")

    def handle(self, *args, **options):
        report = services.user_erase(user=find_user(options["user"]), actor=None)
        for name, value in report.as_dict().items():
            self.stdout.write(f"{name}: {value}")
