from django.core.management.base import BaseCommand, CommandError

from comments.models import User
from portability import queries, services
from portability.management.output import binary_output


class Command(BaseCommand):
    help = "Write everything kept about one user as JSON (what GET /api/v1/me/data answers them). Audited."

    def add_arguments(self, parser):
        parser.add_argument("user", help="user id or username")
        parser.add_argument("--output", "-o", default="-", help="file to write (default: standard output)")

    def handle(self, *args, **options):
        user = find_user(options["user"])
        with binary_output(options["output"]) as out:
            for chunk in queries.user_data_export(user=user):
                out.write(chunk)
        services.user_data_exported(user=user, actor=None)


def find_user(value: str) -> User:
    user = User.objects.filter(pk=int(value)).first() if value.isdigit() else None
    user = user or User.objects.filter(username=value).first()
    if user is None:
        raise CommandError(f"unknown user {value!r}")
    return user
