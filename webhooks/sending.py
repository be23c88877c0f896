"""One HTTP POST of a delivery, with ``urllib.request``: a timeout on the whole exchange, no
redirects followed (a 3xx is a failed attempt: a redirect must not move a signed body
elsewhere), at most ``EXCERPT_BYTES`` of the answer read back for the delivery log."""

from __future__ import annotations

import http.client
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass

EXCERPT_BYTES = 1024
EXCERPT_CHARS = 500


@dataclass(frozen=True)
class Answer:
    code: int | None  # None: no HTTP answer (``error`` says why)
    excerpt: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.code is not None and 200 <= self.code < 300


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None  # urllib then raises HTTPError with the 3xx


_opener = urllib.request.build_opener(_NoRedirects)


def _excerpt(stream) -> str:
    try:
        raw = stream.read(EXCERPT_BYTES)
    except (OSError, ValueError):
        return ""
    # Kept as text: PostgreSQL's text refuses NUL, which an answer may hold.
    return raw.decode("utf-8", errors="replace").replace("\x00", "\ufffd")[:EXCERPT_CHARS]


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float) -> Answer:
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            **headers,
            "Content-Type": "application/json",
            "User-Agent": "comments-webhooks/1",
        },
    )
    try:
        with _opener.open(request, timeout=timeout) as response:
            return Answer(response.status, _excerpt(response))
    except urllib.error.HTTPError as exc:
        with exc:
            return Answer(exc.code, _excerpt(exc))
    except TimeoutError:
        return Answer(None, error="timeout")
    except urllib.error.URLError as exc:
        reason = exc.reason
        return Answer(
            None, error="timeout" if isinstance(reason, (TimeoutError, socket.timeout)) else str(reason)[:200]
        )
    except (OSError, ValueError, http.client.HTTPException) as exc:  # reset mid-answer, a malformed answer, ...
        return Answer(None, error=(str(exc) or type(exc).__name__)[:200])
