"""``python manage.py create_webhook <site key> <url> --event comment.created ...``: a new
endpoint of a site (through ``services.endpoint_create``), and its secret, printed once here (the
admin shows it to staff later)."""

from django.core.management.base import BaseCommand, CommandError

from comments.exceptions import InvalidInput, NotFound
from comments.queries import site_by_key

from ...models import EventType
from ...services import endpoint_create


class Command(BaseCommand):
    help = "Add a webhook endpoint to a site and print its signing secret."

    def add_arguments(self, parser):
        parser.add_argument("site", help="the site's key")
        parser.add_argument("url", help="an http:// or https:// URL the events are posted to")
        parser.add_argument(
            "--event",
            action="append",
            choices=EventType.values,
            default=[],
            help="an event the endpoint wants (repeatable; default: all four)",
        )
        parser.add_argument("--description", default="")

    def handle(self, *args, **options):
        try:
            site = site_by_key(site_key=options["site"])
            endpoint = endpoint_create(
                site=site,
                url=options["url"],
                events=options["event"] or EventType.values,
                description=options["description"],
            )
        except (InvalidInput, NotFound) as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"created endpoint {endpoint.pk} of site {site.key}: {endpoint.url} ({', '.join(endpoint.events)})"
        )
        self.stdout.write(f"secret: {endpoint.secret}")
