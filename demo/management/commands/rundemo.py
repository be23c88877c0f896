"""The demo in one command: the service (``runserver``) and, in a thread, the demo host page
on another port, so the widget is seen the way a customer's readers see it. The demo site's
allowed origins follow the host page's port, or its frame would be refused, and so do its
subjects' URLs. The links in its emails (sign-in links, notifications) point at the service it
serves, unless ``COMMENTS_PUBLIC_URL`` (or ``NOTIFICATIONS_BASE_URL``) says otherwise."""

import os
import threading

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from comments.models import Site
from comments.queries import DEMO_SITE_KEY

from ...services import demo_host_moved
from .demo_host import DEMO_HOST_PORT, article_path, demo_origins, host_app, make_host_server
from .seed_demo import print_demo_urls


class Command(BaseCommand):
    help = "Run the service and the demo host page (run seed_demo first)."

    def add_arguments(self, parser):
        parser.add_argument("--bind", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--host-port", type=int, default=DEMO_HOST_PORT)

    def handle(self, *args, **options):
        bind, port = options["bind"], options["port"]
        service = f"http://{bind}:{port}"
        site = Site.objects.filter(key=DEMO_SITE_KEY).first()
        if site is None:
            self.stderr.write("No demo site: run `python manage.py seed_demo` first.")
            return
        server = make_host_server(
            host_app(service=service, site=site.key, secret=site.sso_secret), bind, options["host_port"]
        )
        host_port = server.server_port
        if not os.environ.get("COMMENTS_PUBLIC_URL"):
            # Links in emails are made of the public address, never of a request's Host header;
            # the demo's is the one it serves, whatever --bind and --port say.
            settings.COMMENTS_PUBLIC_URL = service
            if not os.environ.get("NOTIFICATIONS_BASE_URL"):
                settings.NOTIFICATIONS_BASE_URL = service
        demo_host_moved(site=site, origins=demo_origins(bind, host_port), article_path=article_path)
        threading.Thread(target=server.serve_forever, name="demo-host", daemon=True).start()
        # The addresses as served (seed_demo printed them for COMMENTS_PUBLIC_URL's port).
        print_demo_urls(self.stdout, service)
        try:
            call_command("runserver", f"{bind}:{port}", use_reloader=False)
        finally:
            server.shutdown()
            server.server_close()
