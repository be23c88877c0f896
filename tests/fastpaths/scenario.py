"""The scenario every differential test of a fast path runs (docs/fast-paths.md): a subject with
comments in each display mode, its pages read anonymously and signed in, every cursor followed
to the end of its list, the widget's HTML, then writes (a post, a reply, an edit, a like, a
delete, a moderator's rejection) each followed by the same reads.

A test runs the reads with its fast path on and then off at every step (``Differential.step``)
and compares the answers. What may legitimately differ between the two is listed here, and
only that is left out of the comparison:

- headers: ``X-Comments-Stale`` (the marker of a page served from the
  cache while the database could not rebuild it: never set while the database answers, as here),
  and every other header (transport, not content): only the status and the body are compared;
- in bodies, a cursor (``next_cursor``, the widget's "more" links) is compared by the position
  it names, not by its bytes: a cursor is signed with the second it was made
  (``django.core.signing``), so a page built a second later carries other bytes for the same
  position;
- in the widget's HTML, the text of a ``<time>`` element ("25 seconds ago"): a page rendered once
  shows the ages as they were then (the widget's script brings them up to date); its
  ``datetime`` attribute counts.

Nothing else is left out: every field of a JSON body counts, ``created_at`` and ``edited_at``
included (the same rows carry the same times)."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from django.core import signing
from django.test import Client
from rest_framework.test import APIClient

from comments import services
from comments.models import Status
from comments.queries import cursors
from likes.services import likes_flush

from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory

API = "/api/v1"
# Every display mode, with the sorts read in it.
SORTS = {"two_level": ("hot", "new"), "flat": ("old", "new"), "stacked": ("old",)}
# What every browser says it accepts (the service answers plain bytes whatever it says).
GZIP = {"HTTP_ACCEPT_ENCODING": "gzip, deflate, br"}
# Small pages, so that every list has cursors to follow.
LIMIT = 3
REPLIES = 2

_CURSOR_IN_HTML = re.compile(r"cursor=([A-Za-z0-9_\-.:%]+)")
_AGE_IN_HTML = re.compile(r"(<time datetime=\"[^\"]*\"[^>]*>)[^<]*(</time>)")


def cursor_position(cursor: str) -> object:
    """What a cursor says (its list and position), whenever it was signed."""
    return signing.loads(unquote(cursor), salt=cursors._CURSOR_SALT)


def normalized(body: Any) -> Any:
    """A body with its cursors replaced by the positions they name, and the widget's ages
    left out."""
    if isinstance(body, dict) and body.get("next_cursor"):
        return {**body, "next_cursor": cursor_position(body["next_cursor"])}
    if isinstance(body, str):
        body = _AGE_IN_HTML.sub(r"\1(age)\2", body)
        return _CURSOR_IN_HTML.sub(lambda m: f"cursor=<{cursor_position(m.group(1))}>", body)
    return body


def body_of(response) -> Any:
    """A response's body as the reader sees it: gunzipped if it was compressed, JSON decoded if it
    is JSON, else text."""
    raw = response.content
    if response.get("Content-Encoding") == "gzip":
        raw = gzip.decompress(raw)
    if response.get("Content-Type", "").startswith("application/json"):
        return json.loads(raw)
    return raw.decode()


@dataclass
class World:
    """The scenario's subject and people."""

    site: Any
    subject: Any
    people: dict[str, Any]  # author (has a comment held for review), replier, fan, mod
    clients: dict[str, APIClient] = field(default_factory=dict)
    comments: list[Any] = field(default_factory=list)


def bearer(user) -> APIClient:
    raw, _ = services.token_issue(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def make_people() -> dict[str, Any]:
    return {name: UserFactory() for name in ("author", "replier", "fan", "mod")}


def make_world(*, mode: str = "two_level", people: dict[str, Any] | None = None) -> World:
    """A subject of five top-level comments, replies two deep under the first two, and one
    comment held for review (its author sees it). ``people``: the same persons in twin worlds
    (``make_people``)."""
    site = SiteFactory()
    subject = SubjectFactory(site=site, mode=mode)
    people = people or make_people()
    site.moderators.add(people["mod"])
    author, replier = people["author"], people["replier"]
    roots = [CommentFactory(subject=subject, author=author, body=f"root {n}") for n in range(5)]
    replies = [
        CommentFactory(subject=subject, author=replier, reply_to=roots[n % 2], body=f"reply {n}") for n in range(4)
    ]
    deeper = [CommentFactory(subject=subject, author=author, reply_to=replies[n], body=f"deeper {n}") for n in range(2)]
    held = CommentFactory(subject=subject, author=author, body="held for review")
    services.comment_set_status(comment_id=held.pk, to_status=Status.PENDING)
    world = World(site, subject, people)
    world.comments = [*roots, *replies, *deeper, held]
    world.clients = {"anonymous": APIClient(), "author": bearer(author), "fan": bearer(people["fan"])}
    return world


def pages(
    client, subject, *, mode: str, sort: str, cursor: str | None = None, limit: int = LIMIT
) -> Iterator[tuple[int, Any, str | None]]:
    """Every page of one list from ``cursor`` (None: the first page), following ``next_cursor``
    to its end: ``(status, normalized body, the next cursor as sent)`` each."""
    for _ in range(50):
        params = {"mode": mode, "sort": sort, "limit": limit, "replies": REPLIES}
        if cursor:
            params["cursor"] = cursor
        response = client.get(f"{API}/subjects/{subject.pk}/comments", params, **GZIP)
        body = body_of(response)
        cursor = body.get("next_cursor") if response.status_code == 200 else None
        yield response.status_code, normalized(body), cursor
        if not cursor:
            return
    raise AssertionError("a list of more than 50 pages: its cursors go round")


def widget_pages(world: World) -> Iterator[tuple[str, int, str]]:
    """The widget's HTML in each mode, as an anonymous browser gets it."""
    browser = Client()
    for mode in SORTS:
        query = {"site": world.site.key, "key": world.subject.key, "mode": mode}
        response = browser.get("/embed/", query, headers={"Accept-Encoding": GZIP["HTTP_ACCEPT_ENCODING"]})
        yield mode, response.status_code, normalized(body_of(response))


def read_everything(world: World, *, widget: bool = True) -> dict[tuple, Any]:
    """The scenario's reads: every list of the subject by every reader, cursors followed, each
    list read twice (the second read may come from a copy the first one made), and the widget."""
    answers: dict[tuple, Any] = {}
    for reader, client in world.clients.items():
        for mode, sorts in SORTS.items():
            for sort in sorts:
                for attempt in ("first", "again"):
                    for n, (status, body, _) in enumerate(pages(client, world.subject, mode=mode, sort=sort)):
                        answers[(reader, mode, sort, attempt, n)] = (status, body)
    if widget:
        for attempt in ("first", "again"):
            for mode, status, html in widget_pages(world):
                answers[("widget", mode, attempt)] = (status, html)
    return answers


def first_difference(on: dict, off: dict) -> str | None:
    """Where two sets of answers first differ, said for a failing assert; None when equal."""
    if on.keys() != off.keys():
        return f"different reads: only on {sorted(on.keys() - off.keys())[:3]}, only off {sorted(off.keys() - on.keys())[:3]}"
    for key in on:
        if on[key] != off[key]:
            return f"{key}{_where(on[key], off[key])}"
    return None


def _where(on: Any, off: Any, at: str = "") -> str:
    """The first place where two decoded answers differ, and the two values there."""
    if isinstance(on, dict) and isinstance(off, dict) and on.keys() == off.keys():
        for name in on:
            if on[name] != off[name]:
                return _where(on[name], off[name], f"{at}.{name}")
    if isinstance(on, list | tuple) and isinstance(off, list | tuple) and len(on) == len(off):
        for n, (a, b) in enumerate(zip(on, off, strict=True)):
            if a != b:
                return _where(a, b, f"{at}[{n}]")
    if isinstance(on, str) and isinstance(off, str):
        n = next((n for n, (a, b) in enumerate(zip(on, off, strict=False)) if a != b), min(len(on), len(off)))
        on, off = on[max(0, n - 200) : n + 200], off[max(0, n - 200) : n + 200]
    return f"{at}:\n  on:  {str(on)[:1500]}\n  off: {str(off)[:1500]}"


def assert_same(on: Any, off: Any, what: str) -> None:
    difference = None if on == off else _where(on, off)
    assert difference is None, f"{what}: the fast path answered differently at {difference}"


@dataclass
class Differential:
    """Runs the scenario's reads with a fast path on and off: ``switch(True)`` / ``switch(False)``
    set it."""

    switch: Callable[[bool], None]
    reads: Callable[[], dict]
    steps: list[str] = field(default_factory=list)

    def step(self, name: str) -> dict:
        """The reads with the path on, then off (the path's copies are made, and used, by the
        reads on); the answers must be the same. Returns the answers."""
        self.switch(True)
        on = self.reads()
        self.switch(False)
        off = self.reads()
        self.switch(True)
        difference = first_difference(on, off)
        assert difference is None, f"after {name!r} the fast path answered differently: {difference}"
        self.steps.append(name)
        return on

    def run(self, world: World) -> None:
        """The whole scenario: the reads before any write, then after each write."""
        self.step("nothing yet")
        for name, write in writes(world):
            write()
            self.step(name)
        assert self.steps == ["nothing yet", *WRITES]


# The scenario's writes, in order, and who makes each.
WRITERS = {"post": "author", "reply": "replier", "edit": "author", "like": "fan", "delete": "author", "reject": "mod"}
WRITES = tuple(WRITERS)


def writes(world: World) -> Iterator[tuple[str, Callable[[], None]]]:
    """The scenario's writes, in order, each through the API as its person: ``(name, write)``."""
    author, replier, fan, mod = (bearer(world.people[name]) for name in ("author", "replier", "fan", "mod"))
    subject = world.subject
    made: dict[str, int] = {}

    def post():
        response = author.post(f"{API}/subjects/{subject.pk}/comments", {"body": "a new word"}, format="json")
        assert response.status_code == 201, response.content
        made["post"] = response.json()["id"]

    def reply():
        response = replier.post(
            f"{API}/subjects/{subject.pk}/comments",
            {"body": "an answer", "reply_to_id": world.comments[2].pk},
            format="json",
        )
        assert response.status_code == 201, response.content

    def edit():
        response = author.patch(f"{API}/comments/{world.comments[1].pk}", {"body": "edited words"}, format="json")
        assert response.status_code == 200, response.content

    def like():
        for comment in (world.comments[3], world.comments[5]):
            assert fan.put(f"{API}/comments/{comment.pk}/like").status_code == 200
        # And the like flush, which the worker runs every LIKES_FLUSH_INTERVAL (a no-op when
        # likes go to the database at once): the pages the cache shares show like counts as of
        # the last flush (what a signed-in reader sees is live either way).
        likes_flush()

    def delete():
        assert author.delete(f"{API}/comments/{made['post']}").status_code == 204

    def reject():
        response = mod.post(
            f"{API}/moderation/comments/{world.comments[0].pk}/actions",
            {"action": "reject", "reason": "test"},
            format="json",
        )
        assert response.status_code == 200, response.content

    steps = {"post": post, "reply": reply, "edit": edit, "like": like, "delete": delete, "reject": reject}
    yield from ((name, steps[name]) for name in WRITES)
