from django.core.management.base import BaseCommand

from portability import queries, services
from portability.management.output import binary_output
from portability.management.people import add_person_arguments, person


class Command(BaseCommand):
    help = (
        "Write everything kept about one user as JSON (what GET /api/v1/me/data answers them). Audited. "
        "The user: an id or username, --email, --sso SITE:ID, or --name (lists candidates)."
    )

    def add_arguments(self, parser):
        add_person_arguments(parser)
        parser.add_argument("--output", "-o", default="-", help="file to write (default: standard output)")

    def handle(self, *args, **options):
        user = person(options)
        with binary_output(options["output"]) as out:
            for chunk in queries.user_data_export(user=user):
                out.write(chunk)
        services.user_data_exported(user=user, actor=None)
