from django.core.management.base import BaseCommand, CommandError

from comments.models import User
from comments.names import clean_display_name


class Command(BaseCommand):
    help = "Create a plain local user who can log in with a password (POST /api/v1/auth/token)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--password", required=True)
        parser.add_argument("--name", default="", help="display name")

    def handle(self, *args, **options):
        if User.objects.filter(username=options["username"]).exists():
            raise CommandError(f"user {options['username']!r} already exists")
        user = User.objects.create_user(
            options["username"], password=options["password"], display_name=clean_display_name(options["name"])
        )
        self.stdout.write(f"created user {user.username} (id {user.pk})")
