"""The RSS 2.0 and Atom feeds, read back with feedparser as a feed reader would: only what an
anonymous reader may see, newest first, with correct dates, stable GUIDs and links, the
comment's HTML escaped into the XML exactly once, caching headers and conditional GETs."""

from __future__ import annotations

import calendar

import feedparser
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from comments.services import comment_edit, comment_soft_delete, subject_update
from moderation.actions import comment_moderate

from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory

FORMATS = ["rss", "atom"]


def read(url: str, **headers):
    answer = Client().get(url, **headers)
    assert answer.status_code == 200, answer.content[:300]
    return answer, feedparser.parse(answer.content)


def stamp(moment) -> int:
    return int(moment.timestamp())


@pytest.fixture
def alice(db):
    return UserFactory(username="alice", display_name="Alice")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_subjects_feed_shows_its_public_published_comments_newest_first(db, fmt, alice, moderator):
    subject = SubjectFactory(title="Cats & <Dogs>", url="https://host.example/cats")
    first = CommentFactory(subject=subject, author=alice, body="first")
    reply = CommentFactory(subject=subject, author=alice, body="a reply", reply_to=first)
    CommentFactory(subject=subject, author=alice, body="friends", visibility="friends")
    shadowed = CommentFactory(subject=subject, author=alice, body="shadowed")
    comment_moderate(comment_id=shadowed.pk, actor=UserFactory(is_staff=True), action="shadow")
    gone = CommentFactory(subject=subject, author=alice, body="gone")
    comment_soft_delete(comment=gone, actor=alice)
    CommentFactory(subject=SubjectFactory(site=subject.site), body="another subject")

    answer, feed = read(f"/feeds/subjects/{subject.pk}/comments.{fmt}")
    assert answer["Content-Type"].startswith("application/rss+xml" if fmt == "rss" else "application/atom+xml")
    assert not feed.bozo, feed.get("bozo_exception")
    assert feed.version == ("rss20" if fmt == "rss" else "atom10")
    assert feed.feed.title == "Comments on Cats & <Dogs>"
    assert [e.id for e in feed.entries] == [f"urn:comments:comment:{c.pk}" for c in (reply, first)]
    assert [e.link for e in feed.entries] == [f"https://host.example/cats#comment-{c.pk}" for c in (reply, first)]
    assert feed.entries[0].title == "Alice on Cats & <Dogs>"
    assert feed.entries[0].author == "Alice"
    assert stamp(reply.created_at) == calendar.timegm(feed.entries[0].published_parsed)
    assert stamp(first.created_at) == calendar.timegm(feed.entries[1].published_parsed)
    body = answer.content.decode()
    assert "friends" not in body.replace("friends-only", "") and "shadowed" not in body and "gone" not in body
    assert "another subject" not in body


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_comments_html_is_escaped_once_and_reads_back_as_it_was(db, fmt, subject, alice):
    comment = CommentFactory(subject=subject, author=alice, body="Tom & Jerry **bold** <script>alert(1)</script> 1 < 2")
    html = comment.content.html
    assert "<strong>bold</strong>" in html and "&amp;" in html and "<script" not in html
    answer, feed = read(f"/feeds/subjects/{subject.pk}/comments.{fmt}")
    raw = answer.content.decode()
    assert "<strong>" not in raw and "&lt;strong&gt;bold&lt;/strong&gt;" in raw  # HTML as escaped text
    assert "<script" not in raw
    [entry] = feed.entries
    assert entry.summary == html  # what a reader renders: the sanitized HTML, not escaped twice
    assert entry.summary_detail.type == "text/html"


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_edit_moves_the_updated_date_and_keeps_the_guid(db, fmt, subject, alice):
    comment = CommentFactory(subject=subject, author=alice, body="before")
    _, before = read(f"/feeds/subjects/{subject.pk}/comments.{fmt}")
    edited = comment_edit(comment=comment, editor=alice, body="after")
    _, after = read(f"/feeds/subjects/{subject.pk}/comments.{fmt}")
    assert before.entries[0].id == after.entries[0].id
    assert "after" in after.entries[0].summary
    if fmt == "atom":
        assert calendar.timegm(after.entries[0].updated_parsed) == stamp(edited.edited_at)
        assert calendar.timegm(after.entries[0].published_parsed) == stamp(comment.created_at)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_sites_feed_spans_its_subjects_and_no_other_sites(db, fmt, site, alice):
    a, b = SubjectFactory(site=site), SubjectFactory(site=site, url="")
    ca = CommentFactory(subject=a, author=alice)
    cb = CommentFactory(subject=b, author=alice)
    subject_update(subject=b, actor=UserFactory(is_staff=True), state="closed")  # still read: it is in the feed
    CommentFactory(subject=SubjectFactory(site=SiteFactory()), body="elsewhere")
    answer, feed = read(f"/feeds/sites/{site.key}/comments.{fmt}")
    assert [e.id for e in feed.entries] == [f"urn:comments:comment:{c.pk}" for c in (cb, ca)]
    assert feed.entries[0].link == f"http://testserver/api/v1/comments/{cb.pk}"  # no page: the API's
    assert "elsewhere" not in answer.content.decode()


def test_unknown_sites_and_subjects_are_404(db):
    assert Client().get("/feeds/sites/nope/comments.rss").status_code == 404
    assert Client().get("/feeds/subjects/987654/comments.atom").status_code == 404


@pytest.mark.parametrize("fmt", FORMATS)
def test_conditional_gets_answer_304_until_what_is_shown_changes(db, fmt, subject, alice, settings):
    url = f"/feeds/subjects/{subject.pk}/comments.{fmt}"
    comment = CommentFactory(subject=subject, author=alice)
    first, _ = read(url)
    assert first["Cache-Control"] == f"max-age={settings.FEEDS_MAX_AGE}, public" or set(
        first["Cache-Control"].split(", ")
    ) == {"public", f"max-age={settings.FEEDS_MAX_AGE}"}
    etag, modified = first["ETag"], first["Last-Modified"]
    assert modified.endswith("GMT")
    again = Client().get(url, HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again["ETag"] == etag and again.content == b""
    assert Client().get(url, HTTP_IF_MODIFIED_SINCE=modified).status_code == 304

    newer = CommentFactory(subject=subject, author=alice)
    changed = Client().get(url, HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag
    comment_soft_delete(comment=newer, actor=alice)  # back to the first set: its tag again
    assert Client().get(url, HTTP_IF_NONE_MATCH=etag).status_code == 304
    comment_soft_delete(comment=comment, actor=alice)
    assert Client().get(url, HTTP_IF_NONE_MATCH=etag).status_code == 200


def test_a_feeds_queries_do_not_grow_with_its_entries(db, site, alice, settings):
    def count() -> int:
        with CaptureQueriesContext(connection) as ran:
            read(f"/feeds/sites/{site.key}/comments.rss")
        return len(ran.captured_queries)

    CommentFactory(subject=SubjectFactory(site=site), author=alice)
    few = count()
    for n in range(12):
        CommentFactory(subject=SubjectFactory(site=site), author=UserFactory(), body=f"c{n}")
    assert count() == few <= 4
