"""Exporting a site, as JSON lines and as Disqus XML, and importing the export into an empty
site: the same site again."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from comments import services as comment_services
from comments.models import Comment, CommentContent, Status, Subject
from moderation.actions import comment_moderate
from moderation.models import AuditEntry
from portability import services

from ..factories import SiteFactory, SubjectFactory, UserFactory
from .conftest import assert_consistent, run_import, site_shape

BODIES = [
    'Hello **world**, see https://example.com/x?y=1#z and [the docs](https://example.com/docs "Docs").',
    "我觉得这个方案很有意思，尤其是**缓存**的部分。😀",
    "> quoted\n\nand a list:\n\n- one\n- two\n  - nested\n\n1. first\n2. second",
    "```python\nprint('<script>')\n```\n\nInline `code` and ~~struck~~ *emphasis*; 5 * 3 < 16 & snake_case.",
    "Line one\\\nline two, a@b.example, <https://example.com/%41>",
    "# A heading\n\n---\n\ntext after a rule",
]


@pytest.fixture
def source_site(db, settings):
    """A site written through the service: nesting, every status, flags, an edit, an SSO user
    and a local one, IP addresses and user agents."""
    settings.PORTABILITY_IP_RETENTION_DAYS = 0
    site = SiteFactory(key="source")
    moderator = UserFactory(username="moderator")
    site.moderators.add(moderator)
    sso = comment_services.sso_user_upsert(site=site, external_id="42", name="Sso Person", email="sso@example.com")
    local = UserFactory(username="localperson", display_name="Local Person")
    first = SubjectFactory(site=site, key="article:1", title="First article", url="https://source.example/1")
    second = SubjectFactory(site=site, key="/path/二", title="第二", mode="stacked")
    SubjectFactory(site=site, key="empty", title="Nobody commented")
    at = timezone.now() - timedelta(days=3)
    made = []

    def post(subject, author, body, reply_to=None, **kwargs):
        nonlocal at
        at += timedelta(minutes=7)
        comment = comment_services.comment_create(
            subject=subject,
            author=author,
            body=body,
            reply_to_id=reply_to.pk if reply_to else None,
            created_at=at,
            author_ip="203.0.113.9",
            user_agent="Mozilla/5.0 (test)",
            **kwargs,
        )
        made.append(comment)
        return comment

    a = post(first, sso, BODIES[0])
    b = post(first, local, BODIES[1], a)
    c = post(first, sso, BODIES[2], b)
    post(first, local, BODIES[3], c)
    d = post(first, local, BODIES[4])
    post(first, sso, BODIES[5], d, visibility="friends")
    e = post(second, sso, "to be deleted, with a reply")
    post(second, local, "reply under a deleted comment", e)
    f = post(second, local, "spam to reject")
    g = post(second, sso, "held for review")
    h = post(second, local, "shadowed")
    comment_moderate(comment_id=e.pk, actor=moderator, action="delete")
    comment_moderate(comment_id=f.pk, actor=moderator, action="reject")
    comment_services.comment_set_status(comment_id=g.pk, to_status=Status.PENDING)
    comment_moderate(comment_id=h.pk, actor=moderator, action="shadow")
    comment_moderate(comment_id=a.pk, actor=moderator, action="pin")
    comment_moderate(comment_id=b.pk, actor=moderator, action="feature")
    Comment.objects.filter(pk=d.pk).update(edited_at=d.created_at + timedelta(minutes=1))
    return site


def export(site, format="json") -> bytes:
    out = io.BytesIO()
    services.site_export(site=site, format=format, out=out)
    return out.getvalue()


def normalized(lines: bytes) -> list[dict]:
    """An export with what must differ between two sites taken out: ids (numbered in the order
    they appear), the site's key and name, and when it was made."""
    records = [json.loads(line) for line in lines.splitlines()]
    subjects: dict[int, int] = {}
    comments: dict[int, int] = {}
    for record in records:
        for key in ("exported_at", "site", "name"):
            if record["type"] == "export":
                record.pop(key, None)
        if record["type"] == "subject":
            record["id"] = subjects.setdefault(record["id"], len(subjects))
        elif record["type"] == "comment":
            record["id"] = comments.setdefault(record["id"], len(comments))
            record["subject_id"] = subjects[record["subject_id"]]
            if record["reply_to_id"] is not None:
                record["reply_to_id"] = comments[record["reply_to_id"]]
    return records


def test_json_export_is_one_record_per_line_subjects_then_their_comments(source_site):
    records = [json.loads(line) for line in export(source_site).splitlines()]
    header = records[0]
    assert header["type"] == "export" and header["format"] == "comments-jsonl" and header["version"] == 1
    assert header["site"] == "source"
    types = [r["type"] for r in records[1:]]
    assert types.count("subject") == 3 and types.count("comment") == 11
    seen = set()
    for record in records[1:]:
        if record["type"] == "comment":
            assert record["reply_to_id"] is None or record["reply_to_id"] in seen  # parents first
            seen.add(record["id"])
    sso = next(r for r in records if r["type"] == "comment" and r["body"] == BODIES[0])
    assert sso["author"] == {"id": "42", "name": "Sso Person", "email": "sso@example.com", "avatar": None}
    assert sso["pinned"] and sso["ip"] == "203.0.113.9" and sso["user_agent"] == "Mozilla/5.0 (test)"
    local = next(r for r in records if r["type"] == "comment" and r["body"] == BODIES[1])
    assert local["author"]["id"] == "local:localperson" and local["featured"]
    assert set(sso) == {
        "type",
        "id",
        "subject_id",
        "reply_to_id",
        "author",
        "body",
        "html",
        "status",
        "visibility",
        "pinned",
        "featured",
        "floor",
        "created_at",
        "edited_at",
        "ip",
        "user_agent",
    }


def test_json_export_imports_into_an_empty_site_identically(source_site, tmp_path):
    exported = export(source_site)
    target = SiteFactory(key="target")
    path = tmp_path / "site.jsonl"
    path.write_bytes(exported)
    path = str(path)
    summary = run_import(target, "json", path)
    assert summary.imported == 11 and not summary.skipped and not summary.notes
    assert normalized(export(target)) == normalized(exported)
    assert site_shape(target) == site_shape(source_site)
    for key in ("article:1", "/path/二", "empty"):
        a, b = Subject.objects.get(site=source_site, key=key), Subject.objects.get(site=target, key=key)
        assert (a.title, a.url, a.mode, a.state, a.comment_count, a.root_count, a.created_at) == (
            b.title,
            b.url,
            b.mode,
            b.state,
            b.comment_count,
            b.root_count,
            b.created_at,
        )
    assert_consistent(target)
    # And again: the second import of the export changes nothing.
    assert run_import(target, "json", path).imported == 0
    assert normalized(export(target)) == normalized(exported)


def test_disqus_export_imports_into_an_empty_site_with_the_same_comments(source_site, tmp_path):
    """Disqus's format has no place for friends-only visibility, flags or edit times, and knows
    held comments as not approved; the rest comes back: subjects, the tree, times, statuses,
    authors and the HTML readers see."""
    target = SiteFactory(key="target")
    path = tmp_path / "site.xml"
    path.write_bytes(export(source_site, "disqus"))
    summary = run_import(target, "disqus", str(path))
    assert summary.imported == 11 and not summary.skipped

    def seen(site):
        return [
            (key, depth, floor, status, author, created, html)
            for (
                key,
                depth,
                floor,
                status,
                _visibility,
                _pinned,
                _featured,
                author,
                created,
                _edited,
                _body,
                html,
                *_,
            ) in site_shape(site)
        ]

    expected = [row if row[3] != Status.SHADOW else (*row[:3], Status.PENDING, *row[4:]) for row in seen(source_site)]
    assert seen(target) == expected
    assert set(Subject.objects.filter(site=target).values_list("key", "title")) == set(
        Subject.objects.filter(site=source_site).values_list("key", "title")
    )
    assert_consistent(target)


def test_disqus_export_is_well_formed_and_escapes_everything(source_site):
    from lxml import etree

    CommentContent.objects.filter(body=BODIES[3]).update(html="<p>]]> &amp; \x01 control</p>")
    document = etree.fromstring(export(source_site, "disqus"))
    ns = "{http://disqus.com}"
    assert len(document.findall(ns + "thread")) == 3 and len(document.findall(ns + "post")) == 11
    messages = [p.findtext(ns + "message") for p in document.findall(ns + "post")]
    assert "<p>]]> &amp;  control</p>" in messages


def test_the_export_command_writes_a_file_and_is_audited(source_site, tmp_path):
    path = tmp_path / "site.jsonl"
    err = io.StringIO()
    call_command("export_comments", "--site", "source", "-o", str(path), stderr=err)
    assert path.read_bytes().startswith(b'{"type":"export"')
    assert "exported 3 subjects and 11 comments" in err.getvalue()
    assert AuditEntry.objects.filter(site=source_site, action="data_export").count() == 1
    with pytest.raises(CommandError, match="unknown site 'nope'"):
        call_command("export_comments", "--site", "nope")


def test_export_reads_a_bounded_number_of_rows_at_a_time(source_site, django_assert_max_num_queries):
    """Pages of comments by path, not one query per comment."""
    from portability import queries

    with django_assert_max_num_queries(12):
        assert len(list(queries.site_export_json(site=source_site))) == 15
