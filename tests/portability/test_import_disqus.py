"""Importing Disqus's XML export: threads, the reply tree, statuses, authors, bodies, and
entries that cannot be imported (reported, never a crash)."""

from __future__ import annotations

import gzip
import shutil
from datetime import UTC, datetime

from comments.models import Comment, ExternalIdentity, Status, Subject, SubjectState
from moderation.models import AuditEntry
from portability.models import ImportedItem, ImportRun, RunState

from ..factories import SiteFactory, SubjectFactory
from .conftest import assert_consistent, by_body, counts, fixture_path, run_import, site_comments, site_shape


def test_disqus_export_imports_threads_as_subjects_and_keeps_the_reply_tree(db):
    site = SiteFactory(key="blog")
    summary = run_import(site, "disqus", fixture_path("disqus.xml"))

    hello = Subject.objects.get(site=site, key="post-hello")  # the identifier the site gave Disqus
    assert (hello.title, hello.url, hello.state) == (
        "Hello, world",
        "https://blog.example/2019/hello/",
        SubjectState.OPEN,
    )
    assert hello.created_at == datetime(2019, 3, 1, 9, tzinfo=UTC)
    # No identifier: the link's path, as the page's widget asks for it (location.pathname: escaped)
    chinese = Subject.objects.get(site=site, key="/2020/%E4%B8%AD%E6%96%87/")
    assert chinese.url == "https://blog.example/2020/中文/"
    assert chinese.state == SubjectState.CLOSED and chinese.title == "中文标题 — unicode"
    assert not Subject.objects.filter(site=site, title="Deleted thread").exists()

    first = by_body(site, "First!")
    reply = by_body(site, "Reply to Alice")
    regret = by_body(site, "regrettable")
    deep = by_body(site, "Deep reply")
    assert reply.reply_to_id == first.pk and regret.reply_to_id == reply.pk and deep.reply_to_id == regret.pk
    assert [first.depth, reply.depth, regret.depth, deep.depth] == [0, 1, 2, 3]
    assert deep.root_id == first.pk and deep.path.startswith(regret.path)
    assert [reply.floor, regret.floor, deep.floor] == [1, 2, 3]
    assert first.created_at == datetime(2019, 3, 1, 10, tzinfo=UTC)
    assert summary.imported == 9 == Comment.objects.filter(subject__site=site).count()
    assert_consistent(site)


def test_disqus_statuses_map_to_the_services_statuses(db):
    site = SiteFactory(key="blog")
    summary = run_import(site, "disqus", fixture_path("disqus.xml"))
    assert by_body(site, "regrettable").status == Status.DELETED  # isDeleted, a placeholder over its reply
    assert by_body(site, "cheap watches").status == Status.REJECTED  # isSpam
    assert by_body(site, "First!").status == Status.PUBLISHED
    assert summary.comments == {Status.PUBLISHED: 7, Status.DELETED: 1, Status.REJECTED: 1}
    hello = Subject.objects.get(site=site, key="post-hello")
    # Counted as the public sees them: the deleted and the spam comment are not.
    assert (hello.comment_count, hello.root_count) == (5, 2)


def test_disqus_authors_become_users_of_the_site_with_an_identity(db):
    site = SiteFactory(key="blog")
    summary = run_import(site, "disqus", fixture_path("disqus.xml"))
    alice = ExternalIdentity.objects.get(site=site, external_id="disqus:alice")
    assert (alice.user.display_name, alice.email) == ("Alice", "alice@example.com")
    assert not alice.user.has_usable_password()
    assert by_body(site, "First!").author_id == by_body(site, "Deep reply").author_id == alice.user_id
    bob = by_body(site, "Reply to Alice").author  # anonymous on Disqus: a guest, known by e-mail
    assert ExternalIdentity.objects.get(user=bob).external_id.startswith("disqus-guest:")
    assert by_body(site, "Orphan reply").author_id == bob.pk
    assert by_body(site, "Who wrote this").author is None
    assert summary.users_created == 6


def test_disqus_html_is_converted_and_sanitised_through_the_renderer(db):
    site = SiteFactory(key="blog")
    run_import(site, "disqus", fixture_path("disqus.xml"))
    first = by_body(site, "First!").content
    assert first.body == "First! **Great** post.\n\nSee [the docs](https://example.com/docs)."
    assert "<strong>Great</strong>" in first.html and 'rel="nofollow ugc noopener"' in first.html
    attack = by_body(site, "Reply to Alice").content
    assert attack.body == "Reply to Alice click"  # script, its text, the javascript: link and the image are gone
    literal = by_body(site, "Who wrote this").content
    assert literal.html == "<p>Who wrote this? 5 * 3 = 15 &amp; 2 &lt; 3</p>"  # text stays text
    cjk = by_body(site, "我觉得").content
    assert "我觉得这个方案很有意思 😀" in cjk.html
    assert by_body(site, "第一条评论").content.body == "第一条评论。\n\n- 一\n- 二"


def test_disqus_entries_that_cannot_be_imported_are_reported_with_where_they_are(db):
    site = SiteFactory(key="blog")
    summary = run_import(site, "disqus", fixture_path("disqus.xml"))
    assert summary.skipped == {
        "thread deleted in the source": 2,  # the thread, and its post
        "bad or missing date": 1,
        "no thread": 1,
        "unreadable isDeleted, isSpam or isApproved": 1,
        "duplicate comment id in the file (first kept)": 1,
        "thread not in the file": 1,
    }
    assert summary.examples["bad or missing date"] == ["post 3001"]
    assert summary.examples["thread not in the file"] == ["comment 3003"]
    assert summary.notes["reply to a comment not in the file: kept at the top level"] == 1
    assert by_body(site, "Orphan reply").depth == 0
    text = "\n".join(summary.lines())
    assert "1 duplicate comment id in the file (first kept) (e.g. comment 2001)" in text
    run = ImportRun.objects.get(site=site)
    assert run.state == RunState.DONE and run.summary["skipped"]["no thread"] == 1


def test_a_reply_dated_before_its_parent_is_placed_right_after_it(db):
    site = SiteFactory(key="blog")
    summary = run_import(site, "disqus", fixture_path("disqus.xml"))
    parent, skewed = by_body(site, "Who wrote this"), by_body(site, "Clock skew")
    assert skewed.reply_to_id == parent.pk and skewed.pk > parent.pk
    assert skewed.created_at == datetime(2019, 3, 1, 10, 30, tzinfo=UTC)  # the date stays as the source says
    assert summary.notes["reply dated before the comment it answers: placed right after it"] == 1
    assert_consistent(site)


def test_importing_the_same_export_twice_changes_nothing(db):
    site = SiteFactory(key="blog")
    run_import(site, "disqus", fixture_path("disqus.xml"))
    before = (site_shape(site), counts(site), ExternalIdentity.objects.count(), ImportedItem.objects.count())
    again = run_import(site, "disqus", fixture_path("disqus.xml"))
    assert again.imported == 0 and again.users_created == 0 and again.subjects_created == 0
    assert again.skipped["already imported"] == 9 and again.subjects_known == 2
    assert (site_shape(site), counts(site), ExternalIdentity.objects.count(), ImportedItem.objects.count()) == before


def test_a_newer_export_adds_only_what_is_new(db, tmp_path):
    site = SiteFactory(key="blog")
    run_import(site, "disqus", fixture_path("disqus.xml"))
    old = {c.pk: (c.floor, c.status) for c in site_comments(site)}
    newer = tmp_path / "newer.xml"
    with open(fixture_path("disqus.xml"), encoding="utf-8") as fixture:
        text = fixture.read()
    newer.write_text(
        text.replace(
            "</disqus>",
            """
  <post dsq:id="1008"><message><![CDATA[<p>A new reply to the first comment.</p>]]></message>
    <createdAt>2024-01-01T10:00:00Z</createdAt><isDeleted>false</isDeleted><isSpam>false</isSpam>
    <author><name>Alice</name><isAnonymous>false</isAnonymous><username>alice</username></author>
    <thread dsq:id="100"/><parent dsq:id="1001"/></post>
  <post dsq:id="1009"><message><![CDATA[<p>A new top-level comment.</p>]]></message>
    <createdAt>2024-01-02T10:00:00Z</createdAt><isDeleted>false</isDeleted><isSpam>false</isSpam>
    <author><name>Eve</name><isAnonymous>false</isAnonymous><username>eve</username></author>
    <thread dsq:id="100"/></post>
</disqus>""",
        ),
        encoding="utf-8",
    )
    summary = run_import(site, "disqus", str(newer))
    assert summary.imported == 2 and summary.skipped["already imported"] == 9 and summary.users_created == 1
    assert {c.pk: (c.floor, c.status) for c in site_comments(site) if c.pk in old} == old
    first, new_reply = by_body(site, "First!"), by_body(site, "A new reply")
    assert new_reply.reply_to_id == first.pk and new_reply.floor == 4  # the thread's fourth reply
    assert by_body(site, "A new top-level").floor == 4
    first.refresh_from_db()
    assert first.reply_count == 3  # 2 visible replies before (one is deleted), and the new one
    assert_consistent(site)


def test_threads_join_existing_subjects_of_the_site_by_key_or_url(db):
    site = SiteFactory(key="blog")
    by_key = SubjectFactory(site=site, key="post-hello", title="Mine")
    by_url = SubjectFactory(site=site, key="article-2", url="https://blog.example/2020/中文/")
    other_site = SubjectFactory(site=SiteFactory(key="other"), key="post-hello")
    summary = run_import(site, "disqus", fixture_path("disqus.xml"))
    assert summary.subjects_matched == 2 and summary.subjects_created == 0
    assert Comment.objects.filter(subject=by_key).count() == 7
    assert Comment.objects.filter(subject=by_url).count() == 2
    assert not Comment.objects.filter(subject=other_site).exists()
    by_key.refresh_from_db()
    assert by_key.title == "Mine"  # a subject's own data is the site's, not the file's
    assert_consistent(site)


def test_a_gzipped_export_imports_as_it_is(db, tmp_path):
    site = SiteFactory(key="blog")
    packed = tmp_path / "export.xml.gz"
    with open(fixture_path("disqus.xml"), "rb") as source, gzip.open(packed, "wb") as out:
        shutil.copyfileobj(source, out)
    assert run_import(site, "disqus", str(packed)).imported == 9


def test_the_import_is_audited_on_the_site(db):
    site = SiteFactory(key="blog")
    run_import(site, "disqus", fixture_path("disqus.xml"), source_name="export.xml")
    entry = AuditEntry.objects.get(site=site, action="data_import")
    assert entry.reason.startswith("disqus export.xml") and "comments imported: 9" in entry.reason
