from django.core.management.base import BaseCommand, CommandError

from comments.models import Site
from portability import services
from portability.management.output import binary_output


class Command(BaseCommand):
    help = 'Export every subject and comment of a site: JSON lines (docs/API.md, "Site export") or Disqus XML. Audited.'

    def add_arguments(self, parser):
        parser.add_argument("--site", required=True, help="key of the site")
        parser.add_argument("--format", default="json", choices=["json", "disqus"])
        parser.add_argument("--output", "-o", default="-", help="file to write (default: standard output)")

    def handle(self, *args, **options):
        site = Site.objects.filter(key=options["site"]).first()
        if site is None:
            raise CommandError(f"unknown site {options['site']!r}")
        with binary_output(options["output"]) as out:
            written = services.site_export(site=site, format=options["format"], out=out)
        self.stderr.write(f"exported {written['subjects']:,} subjects and {written['comments']:,} comments")
