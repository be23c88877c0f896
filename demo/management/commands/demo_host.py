"""A stand-in for a customer's web site, on its own origin, embedding the widget the way a
customer would: a ``<div data-comments>``, the loader ``<script async>``, comment counts, and
single sign-on with the payload signed on the server with the site's SSO secret.

``python manage.py demo_host --port 8001 --service http://127.0.0.1:8000`` serves it with the
standard library (it is the customer's site, not part of the service); the browser tests serve
the same WSGI app (``host_app``) from a thread.
"""

from __future__ import annotations

import html
import time
from socketserver import ThreadingMixIn
from urllib.parse import parse_qs, quote, unquote, urlencode
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from django.core.management.base import BaseCommand

from comments.queries import DEMO_SITE_KEY
from comments.sso import sign_payload

DEMO_HOST_PORT = 8001
DEMO_USERS = ["alice", "bob", "carol", "dave"]
DEMO_ARTICLES = [
    ("article:two-level", "Two-level discussion (hot first)"),
    ("article:flat", "A flat discussion"),
    ("article:stacked", "Stacked floors (盖楼)"),
]
HOST_JS = """// The host site's own script: when the widget asks for a sign-in, point at the user picker.
document.addEventListener('comments:login-request', () => {
  const pick = document.getElementById('user');
  if (pick) { pick.focus(); pick.classList.add('ask'); }
});
document.addEventListener('comments:user', (e) => {
  const who = document.getElementById('who');
  if (who) who.textContent = e.detail.user ? e.detail.user.name : '';
});
"""
HOST_CSS = """body{font:16px/1.6 Georgia,serif;max-width:760px;margin:0 auto;padding:16px;color:#222;background:#fdfcf8}
header{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center;justify-content:space-between;border-bottom:1px solid #ddd}
form{font:14px system-ui,sans-serif;display:flex;flex-wrap:wrap;gap:8px;align-items:center}
select,button{font:inherit}.ask{outline:3px solid #e36209}.meta{color:#666;font:14px system-ui,sans-serif}
body.dark{background:#111;color:#ddd}body.dark a{color:#8ab4f8}
@media (prefers-color-scheme: dark){body.auto{background:#111;color:#ddd}body.auto a{color:#8ab4f8}}
"""
THEMES = ("auto", "light", "dark")  # the widget's; the first is what it shows unless told


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def article_path(key: str) -> str:
    """Where the host page shows the article of subject ``key`` with the widget."""
    return f"/a/{quote(key)}"


def demo_origins(bind: str, port: int) -> list[str]:
    """The origins of the demo host page served on ``bind:port``: a loopback address under
    both its names, as a reader may type either."""
    if bind in ("127.0.0.1", "localhost"):
        return [f"http://127.0.0.1:{port}", f"http://localhost:{port}"]
    return [f"http://{bind}:{port}"]


def host_csp(service: str) -> str:
    """The Content-Security-Policy a host page may keep with the widget on it: its own scripts
    and the service's loader, the counts fetched from the service, the discussion framed from
    it; no inline code anywhere (the loader sizes the frame through the CSSOM, which a policy
    does not limit)."""
    return (
        f"default-src 'self'; script-src 'self' {service}; style-src 'self'; img-src 'self' data:; "
        f"connect-src {service}; frame-src {service}; object-src 'none'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"
    )


def host_app(*, service: str, site: str, secret: str, users=DEMO_USERS, articles=DEMO_ARTICLES, ttl: int = 3600):
    """The host site as a WSGI app: ``/`` lists the articles with their comment counts,
    ``/a/<subject key>`` shows one with the widget; ``?user=`` signs in a demo user (SSO),
    ``?theme=``, ``?lang=`` and ``?mode=`` are passed to the widget."""
    service = service.rstrip("/")
    titles = dict(articles)
    policy = host_csp(service)

    def html_headers() -> list[tuple[str, str]]:
        # A new list each time: the server adds to the one it is given (Content-Length, Date).
        return [("Content-Type", "text/html; charset=utf-8"), ("Content-Security-Policy", policy)]

    def page(title: str, body: str, theme: str) -> bytes:
        return (
            "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{_e(title)}</title><link rel='icon' href='data:,'><link rel='stylesheet' href='/host.css'>"
            "<script src='/host.js' defer></script></head>"
            f"<body class='{theme}'>{body}"
            f"<script src='{_e(service)}/static/comments/embed.js' async></script></body></html>"
        ).encode()

    def picker(params: dict, user: str, theme: str) -> str:
        def options(name, values, current):
            return "".join(
                f"<option value='{_e(v)}'{' selected' if v == current else ''}>{_e(label)}</option>"
                for v, label in values
            )

        return (
            "<form method='get'>"
            f"<label>Signed in as <select id='user' name='user'>{options('user', [('', '(nobody)')] + [(u, u.capitalize()) for u in users], user)}</select></label>"
            f"<label>Theme <select name='theme'>{options('theme', [(t, t) for t in THEMES], theme)}</select></label>"
            f"<label>Language <select name='lang'>{options('lang', [('', '(browser)'), ('en', 'English'), ('zh-hans', '简体中文')], params.get('lang', ''))}</select></label>"
            "<button>Apply</button></form>"
        )

    def app(environ, start_response):
        path = environ.get("PATH_INFO", "/")
        params = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        if path == "/host.js":
            start_response("200 OK", [("Content-Type", "text/javascript; charset=utf-8")])
            return [HOST_JS.encode()]
        if path == "/host.css":
            start_response("200 OK", [("Content-Type", "text/css; charset=utf-8")])
            return [HOST_CSS.encode()]
        user = params.get("user", "") if params.get("user", "") in users else ""
        # The picker shows the theme the widget is given: the widget's own default unless chosen.
        theme = params["theme"] if params.get("theme") in THEMES else THEMES[0]
        keep = urlencode({k: v for k, v in params.items() if k in ("user", "theme", "lang") and v})
        if path == "/":
            items = "".join(
                f"<li><a href='{article_path(key)}?{keep}'>{_e(title)}</a> "
                f"<span class='meta'>(<span data-comment-count='{_e(key)}'>…</span> comments)</span></li>"
                for key, title in articles
            )
            body = f"<header><h1>Demo blog</h1>{picker(params, user, theme)}</header><p>A customer's site on its own origin.</p><ul>{items}</ul>"
            start_response("200 OK", html_headers())
            return [page("Demo blog", body, theme)]
        if path.startswith("/a/"):
            key = unquote(path[3:])
            title = titles.get(key, key)
            sso = ""
            if user:
                claims = {"id": f"demo-{user}", "name": user.capitalize(), "exp": int(time.time()) + ttl}
                sso = f" data-sso='{_e(sign_payload(secret, claims))}'"
            attrs = f" data-theme='{theme}'" + "".join(
                f" data-{name}='{_e(params[name])}'" for name in ("lang", "mode") if params.get(name)
            )
            body = (
                f"<header><p><a href='/?{keep}'>Demo blog</a></p>{picker(params, user, theme)}</header>"
                f"<article><h1>{_e(title)}</h1><p class='meta'><span data-comment-count='{_e(key)}'>…</span> comments"
                f" · <span id='who'></span></p>"
                "<p>This page stands for a customer's article. The discussion below is the comment "
                "service's widget, framed from another origin and sized to its content.</p></article>"
                f"<section id='comments'><div data-comments data-site='{_e(site)}' data-key='{_e(key)}' "
                f"data-title='{_e(title)}'{attrs}{sso}></div></section>"
            )
            start_response("200 OK", html_headers())
            return [page(title, body, theme)]
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"Not found"]

    return app


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):
        pass


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def make_host_server(app, host: str = "127.0.0.1", port: int = 8001):
    """A threaded stdlib server for ``app`` (port 0 picks a free one: ``server.server_port``)."""
    return make_server(host, port, app, server_class=_ThreadingServer, handler_class=_QuietHandler)


class Command(BaseCommand):
    help = "Serve a demo host page (a customer's site, on another origin) that embeds the widget."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=DEMO_HOST_PORT)
        parser.add_argument("--bind", default="127.0.0.1")
        parser.add_argument("--service", default="http://127.0.0.1:8000", help="the comment service's base URL")
        parser.add_argument("--site", default=DEMO_SITE_KEY)

    def handle(self, *args, **options):
        from comments.models import Site

        site = Site.objects.filter(key=options["site"]).first()
        if site is None:
            self.stderr.write(f"No site {options['site']!r}: run `python manage.py seed_demo` first.")
            return
        server = make_host_server(
            host_app(service=options["service"], site=site.key, secret=site.sso_secret),
            options["bind"],
            options["port"],
        )
        from ...services import demo_host_moved

        demo_host_moved(site=site, origins=demo_origins(options["bind"], server.server_port), article_path=article_path)
        self.stdout.write(
            f"Demo host page: http://{options['bind']}:{server.server_port}/  (embeds {options['service']})"
        )
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
