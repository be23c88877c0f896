"""The RSS 2.0 and Atom feeds, read back with feedparser as a feed reader would: only what an
anonymous reader may see, newest first, with correct dates, stable GUIDs and links, the
comment's HTML escaped into the XML exactly once, caching headers and conditional GETs. And
attacked as a reader sees them (read with the standard library's XML and HTML parsers): a
subject, a site or a commenter named with markup shows as those characters and runs nothing,
and no link is anything but http(s)."""

from __future__ import annotations

import calendar
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from urllib.parse import urlsplit

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


class Markup(HTMLParser):
    """A text read as HTML, as a reader renders an RSS title or description: its elements
    (with their attributes), anything else that is not text, and its text."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, list]] = []
        self.texts: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, attrs))

    def handle_startendtag(self, tag, attrs):
        self.elements.append((tag, attrs))

    def handle_comment(self, data):
        self.elements.append(("!--", []))

    def handle_decl(self, decl):
        self.elements.append(("!", []))

    def handle_pi(self, data):
        self.elements.append(("?", []))

    def handle_data(self, data):
        self.texts.append(data)

    @property
    def text(self) -> str:
        return "".join(self.texts)


def as_read(detail) -> str:
    """What a reader shows of one of feedparser's texts: HTML (RSS's titles) read as text."""
    return Markup(detail.value).text if detail.type == "text/html" else detail.value


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
    assert as_read(feed.feed.title_detail) == "Comments on Cats & <Dogs>"
    assert [e.id for e in feed.entries] == [f"urn:comments:comment:{c.pk}" for c in (reply, first)]
    assert [e.link for e in feed.entries] == [f"https://host.example/cats#comment-{c.pk}" for c in (reply, first)]
    assert as_read(feed.entries[0].title_detail) == "Alice on Cats & <Dogs>"
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


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_subjects_feed_by_its_key_is_what_a_static_template_links(db, fmt, site, alice):
    """A page knows its key (the widget's data-key: a path, with slashes), not its subject's id:
    ``?key=`` on the site's feed gives that subject's feed, its self link keeping the key."""
    page = SubjectFactory(site=site, key="/2024/05/cats/", title="Cats", url="https://blog.example/2024/05/cats/")
    mine = CommentFactory(subject=page, author=alice)
    CommentFactory(subject=SubjectFactory(site=site), body="another page")
    CommentFactory(subject=SubjectFactory(site=SiteFactory(), key=page.key), body="another site, same key")
    answer, feed = read(f"/feeds/sites/{site.key}/comments.{fmt}?key=%2F2024%2F05%2Fcats%2F&utm_source=x")
    assert [e.id for e in feed.entries] == [f"urn:comments:comment:{mine.pk}"]
    assert feed.entries[0].link == f"https://blog.example/2024/05/cats/#comment-{mine.pk}"
    assert as_read(feed.feed.title_detail) == "Comments on Cats"
    assert f"/feeds/sites/{site.key}/comments.{fmt}?key=%2F2024%2F05%2Fcats%2F" in answer.content.decode()
    assert "utm_source" not in answer.content.decode()
    # A key no page has used yet is not found, and makes no subject.
    assert Client().get(f"/feeds/sites/{site.key}/comments.{fmt}?key=nothing-yet").status_code == 404
    assert not page.site.subjects.filter(key="nothing-yet").exists()
    for hostile in ("%00", "a" * 256):
        assert Client().get(f"/feeds/sites/{site.key}/comments.{fmt}?key={hostile}").status_code == 404


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


# --- markup in names and titles, hostile links -----------------------------------------------

SUBJECT_TITLE = "<img src=x onerror=alert(1)>"
SITE_NAME = "<svg onload=alert(2)>Blog</svg>"
AUTHOR_NAME = "<script>alert(3)</script>"
HOSTILE_BODY = '<img src=x onerror=alert(4)> [click](javascript:alert(5)) <a href="javascript:alert(6)">me</a>'
ATOM = "{http://www.w3.org/2005/Atom}"
DC = "{http://purl.org/dc/elements/1.1/}"


@pytest.fixture
def hostile(db):
    """A site, a subject and a commenter named with markup, subjects whose URLs are a
    ``javascript:`` and a ``data:`` URL (as an import or the admin may store them), and a
    comment trying markup of its own."""
    site = SiteFactory(name=SITE_NAME)
    subject = SubjectFactory(site=site, title=SUBJECT_TITLE, url="javascript:alert(7)")
    other = SubjectFactory(site=site, title="Plain", url="data:text/html,<script>alert(8)</script>")
    author = UserFactory(username="mallory", display_name=AUTHOR_NAME)
    CommentFactory(subject=other, author=author, body="plain words")
    CommentFactory(subject=subject, author=author, body=HOSTILE_BODY)
    return subject


def hostile_feed(subject, which: str, fmt: str) -> ET.Element:
    url = (
        f"/feeds/subjects/{subject.pk}/comments.{fmt}"
        if which == "subject"
        else f"/feeds/sites/{subject.site.key}/comments.{fmt}"
    )
    answer = Client().get(url)
    assert answer.status_code == 200
    return ET.fromstring(answer.content)


def assert_sanitized(html: str) -> None:
    """A comment's HTML: markup of its own, but nothing that runs or leads to script."""
    for tag, attrs in Markup(html).elements:
        assert tag not in ("script", "img", "svg", "iframe", "object", "embed", "style"), html
        for name, value in attrs:
            assert not name.startswith("on"), html
            if name in ("href", "src"):
                assert (value or "").startswith(("http://", "https://", "mailto:", "#", "/")), html


def assert_web_link(url: str | None) -> None:
    """An http(s) link; here always the service's own (the subjects' pages are not web pages):
    the syndication framework would otherwise prefix ``javascript:…`` with its own host."""
    assert url and url.startswith(("http://", "https://")), url
    assert urlsplit(url).netloc == "testserver" and "javascript" not in url and "data:" not in url, url


@pytest.mark.parametrize("which", ["subject", "site"])
def test_rss_titles_descriptions_and_authors_read_as_html_are_text_only(hostile, which):
    channel = hostile_feed(hostile, which, "rss").find("channel")
    assert channel is not None
    items = channel.findall("item")
    assert len(items) == (1 if which == "subject" else 2)
    # Each is the text of the XML element (XML unescaped once), which a reader renders as HTML.
    title, description = channel.findtext("title"), channel.findtext("description")
    texts = [title, description]
    for item in items:
        texts += [item.findtext("title"), item.findtext(f"{DC}creator")]
    for text in texts:
        read = Markup(text or "")
        assert read.elements == [], text  # no element, no attribute: only text
        assert read.text  # and the text is there
    expected = f"Comments on {SUBJECT_TITLE}" if which == "subject" else f"Recent comments on {SITE_NAME}"
    assert Markup(title or "").text == Markup(description or "").text == expected  # shown as written
    assert Markup(items[0].findtext("title") or "").text == f"{AUTHOR_NAME} on {SUBJECT_TITLE}"
    assert Markup(items[0].findtext(f"{DC}creator") or "").text == AUTHOR_NAME
    for item in items:
        assert_sanitized(item.findtext("description") or "")
    # Links: the channel's, each item's, the feed's own; never the subjects' javascript:/data:.
    assert_web_link(channel.findtext("link"))
    for item in items:
        assert_web_link(item.findtext("link"))
    for link in channel.iter(f"{ATOM}link"):
        assert_web_link(link.get("href"))


@pytest.mark.parametrize("which", ["subject", "site"])
def test_atom_keeps_names_and_titles_as_text_and_links_as_web_links(hostile, which):
    feed = hostile_feed(hostile, which, "atom")
    entries = feed.findall(f"{ATOM}entry")
    # Atom's text constructs say they are text (no type, or type="text"): a reader shows the
    # characters as they are, so they stay unescaped here (escaping them would show "&lt;").
    expected = f"Comments on {SUBJECT_TITLE}" if which == "subject" else f"Recent comments on {SITE_NAME}"
    texts = [(feed.find(f"{ATOM}title"), expected), (feed.find(f"{ATOM}subtitle"), expected)]
    texts += [(entries[0].find(f"{ATOM}title"), f"{AUTHOR_NAME} on {SUBJECT_TITLE}")]
    texts += [(entries[0].find(f"{ATOM}author/{ATOM}name"), AUTHOR_NAME)]
    for element, text in texts:
        assert element is not None and element.get("type") in (None, "text")
        assert element.text == text
    for entry in entries:
        summary = entry.find(f"{ATOM}summary")
        assert summary is not None and summary.get("type") == "html"
        assert_sanitized(summary.text or "")
    for link in feed.iter(f"{ATOM}link"):
        assert_web_link(link.get("href"))
