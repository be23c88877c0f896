import time

from django.core.management.base import BaseCommand, CommandError

from comments.models import Site
from portability import queries, services
from portability.formats import FormatError
from portability.keys import ImportOptions, KeyFrom, OptionError
from portability.models import ImportFormat


class Command(BaseCommand):
    help = (
        "Import a site's comments from another system's export (or this service's own); "
        "importing the same file again changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "file",
            help="the export: Disqus or WordPress XML, an Isso database, a Remark42 backup, a JSON lines export (.gz too, but Isso)",
        )
        parser.add_argument("--site", required=True, help="key of the site to import into")
        parser.add_argument("--format", required=True, help=f"one of {', '.join(ImportFormat.values)}")
        parser.add_argument(
            "--workers",
            type=int,
            default=1,
            help="processes converting and rendering bodies, the biggest cost of a big import (default 1)",
        )
        parser.add_argument(
            "--map-url",
            action="append",
            default=[],
            metavar="OLD=NEW",
            help="move the threads' URLs (repeatable): OLD ending with / is a prefix (every URL under it "
            "moves; the longest prefix wins), else one URL; NEW is an http(s) URL. Keys made from URLs "
            "and the subjects' stored URLs are the new ones",
        )
        parser.add_argument(
            "--key-from",
            metavar="|".join(KeyFrom),
            help="what the subject keys are made from: path (the URL's path, the widget's default key), "
            "url (the whole URL) or id (the thread's id in the source). Default: the thread's identifier "
            "where the site named it (Disqus <id>, this service's key, Isso's data-isso-id), else its path",
        )
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="print the subject each thread would go to (key, URL, title, comments) and write nothing",
        )

    def handle(self, *args, **options):
        if options["format"] not in ImportFormat.values:
            raise CommandError(f"unknown format {options['format']!r}: use one of {', '.join(ImportFormat.values)}")
        try:
            how = ImportOptions.parse(map_url=options["map_url"], key_from=options["key_from"])
        except OptionError as exc:
            raise CommandError(str(exc)) from None
        site = Site.objects.filter(key=options["site"]).first()
        if site is None:
            raise CommandError(f"unknown site {options['site']!r} (create it with create_site first)")
        try:
            if options["dry_run"]:
                preview = queries.import_preview(site=site, format=options["format"], path=options["file"], options=how)
                for line in preview.lines():
                    self.stdout.write(line)
                return
            summary = services.import_file(
                site=site,
                format=options["format"],
                path=options["file"],
                source_name=options["file"],
                progress=_ProgressLine(self.stdout),
                workers=options["workers"],
                options=how,
            )
        except (FormatError, services.ImportBusy) as exc:
            raise CommandError(f"nothing imported: {exc}") from None
        for line in summary.lines():
            self.stdout.write(line)


class _ProgressLine:
    """A line every few seconds: what is being done, how far, and how fast."""

    EVERY = 2.0

    def __init__(self, out, clock=time.monotonic):
        self.out, self.clock = out, clock
        self.phase = None
        self.started = self.shown = 0.0

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        now = self.clock()
        if phase != self.phase:  # a phase starts (the import says so with done 0): the rate counts from here
            self.phase, self.started, self.shown = phase, now, now
        if done == 0:
            return
        finished = total is not None and done >= total
        if now - self.shown < self.EVERY and not finished:
            return
        self.shown = now
        rate = done / max(now - self.started, 1e-6)
        of = f" of {total:,}" if total is not None else ""
        what = "records" if phase == "reading" else "comments"
        self.out.write(f"{phase}: {done:,}{of} {what} ({rate:,.0f}/s)")
