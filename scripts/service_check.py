"""What CI asks of a running instance of the service, over HTTP as a client would: ``/healthz``
with every backing service ok, then sign in, create a subject, post a comment, like it, and wait
until the worker's flush has written the like to PostgreSQL (``like_count`` in the row).

Shared by ``scripts/install-check`` (the project installed without its dev extras) and
``scripts/test-container`` (the image and ``compose.yaml``), which import it from their own
folder. It needs nothing but the standard library: it runs outside the service's virtualenv.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

# /healthz with the database, the cache and the broker each answering.
HEALTHY = {"database": "ok", "cache": "ok", "broker": "ok"}


class CheckFailed(Exception):
    """A step failed or took too long; the message names it."""


def never_gone() -> str | None:
    return None


def wait_for(
    what: str, seconds: float, done: Callable[[], bool], *, gone: Callable[[], str | None] = never_gone
) -> None:
    """Wait until ``done()``, for at most ``seconds``. ``gone()`` names a reason to stop waiting
    (a process the step needs has exited), or None."""
    deadline = time.monotonic() + seconds
    while True:
        reason = gone()
        if reason is not None:
            raise CheckFailed(f"while waiting for {what}: {reason}")
        if done():
            return
        if time.monotonic() > deadline:
            raise CheckFailed(f"gave up waiting for {what} after {seconds:.0f} s")
        time.sleep(0.2)


def healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=5) as response:
            return bool(json.load(response) == HEALTHY)
    except (OSError, ValueError):
        return False


def call(
    base: str, method: str, path: str, body: dict[str, object] | None = None, *, token: str | None = None, expect: int
) -> dict[str, Any]:
    """The API's JSON answer to one request, which must have the status ``expect``."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{base}{path}", method=method, data=data)
    request.add_header("Content-Type", "application/json")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, answer = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, answer = error.code, error.read()
    except OSError as error:
        raise CheckFailed(f"{method} {path}: {error}") from None
    if status != expect:
        raise CheckFailed(f"{method} {path} answered {status}, not {expect}: {answer[:2000]!r}")
    answered: dict[str, Any] = json.loads(answer)
    return answered


def post_like_and_flush(
    base: str,
    *,
    site: str,
    username: str,
    password: str,
    subject_key: str,
    label: str,
    flush_seconds: float,
    stored_like_count: Callable[[int], int | None],
    gone: Callable[[], str | None] = never_gone,
) -> None:
    """As ``username`` (a local user with ``password``), on the site ``site``: create the
    subject ``subject_key``, post a comment, like it, then wait up to ``flush_seconds`` until
    ``stored_like_count(comment id)`` (read from PostgreSQL) says the worker flushed the like.
    ``label`` names the run in the messages."""
    token = call(base, "POST", "/api/v1/auth/token", {"username": username, "password": password}, expect=200)["token"]
    subject = call(base, "POST", "/api/v1/subjects", {"site": site, "key": subject_key}, token=token, expect=201)
    comment = call(
        base,
        "POST",
        f"/api/v1/subjects/{subject['id']}/comments",
        {"body": f"Posted through gunicorn ({label})."},
        token=token,
        expect=201,
    )
    if comment["status"] != "published":
        raise CheckFailed(f"the comment was stored {comment['status']!r}, not published: {comment}")
    liked = call(base, "PUT", f"/api/v1/comments/{comment['id']}/like", token=token, expect=200)
    if liked != {"liked": True, "like_count": 1}:
        raise CheckFailed(f"the like answered {liked}")
    wait_for(
        f"the worker to flush the like to PostgreSQL ({label})",
        flush_seconds,
        lambda: stored_like_count(comment["id"]) == 1,
        gone=gone,
    )


def like_count_query(comment_id: int) -> str:
    """The SQL that reads a comment's flushed like count."""
    return f"SELECT like_count FROM comment_index WHERE id = {int(comment_id)}"
