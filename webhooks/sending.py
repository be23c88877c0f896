"""One HTTP POST of a delivery, over a connection of ``infra.outbound``: only to public
addresses (unless ``WEBHOOKS_DELIVER_PRIVATE``), checked after the name is resolved, and to the
very address checked; a timeout on each wait on the socket; no redirects followed (a 3xx is a
failed attempt: a redirect must not move a signed body elsewhere, nor lead the request to an
address nobody checked); at most ``EXCERPT_BYTES`` of the answer read back for the delivery
log. An error says what went wrong in the service's words, never with the receiver's bytes
(those are the excerpt, which only staff see)."""

from __future__ import annotations

import http.client
from dataclasses import dataclass

from infra import outbound

EXCERPT_BYTES = 1024
EXCERPT_CHARS = 500


@dataclass(frozen=True)
class Answer:
    code: int | None  # None: no HTTP answer (``error`` says why)
    excerpt: str = ""
    error: str = ""
    refused: bool = False  # the destination is one the service does not speak to: nothing was sent

    @property
    def ok(self) -> bool:
        return self.code is not None and 200 <= self.code < 300


def _excerpt(stream) -> str:
    try:
        raw = stream.read(EXCERPT_BYTES)
    except (OSError, ValueError, http.client.HTTPException):
        return ""
    # Kept as text: PostgreSQL's text refuses NUL, which an answer may hold.
    return raw.decode("utf-8", errors="replace").replace("\x00", "\ufffd")[:EXCERPT_CHARS]


def _reason(exc: Exception) -> str:
    """Why there is no answer, without what the receiver sent (``BadStatusLine`` carries the
    line it read, which may be another service's banner)."""
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "closed without an answer"
    if isinstance(exc, http.client.HTTPException):
        return f"not an HTTP answer ({type(exc).__name__})"
    if isinstance(exc, OSError):
        return (exc.strerror or str(exc) or type(exc).__name__)[:200]
    return type(exc).__name__


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float, allow_private: bool) -> Answer:
    try:
        connection, target = outbound.connection_open(url, allow_private=allow_private, timeout=timeout)
    except outbound.DestinationRefused as exc:
        return Answer(None, error=f"refused: {exc}"[:200], refused=True)
    except OSError as exc:  # the name does not resolve
        return Answer(None, error=_reason(exc))
    try:
        connection.request(
            "POST",
            target,
            body=body,
            headers={
                **headers,
                "Content-Type": "application/json",
                "User-Agent": "comments-webhooks/1",
            },
        )
        response = connection.getresponse()
        return Answer(response.status, _excerpt(response))
    except (OSError, ValueError, http.client.HTTPException) as exc:  # refused, reset, timed out, malformed
        return Answer(None, error=_reason(exc))
    finally:
        connection.close()
