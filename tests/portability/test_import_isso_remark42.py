"""Importing Isso's SQLite database and Remark42's backup (JSON lines)."""

from __future__ import annotations

from datetime import UTC, datetime

from comments.models import ExternalIdentity, Status, Subject, SubjectState

from ..factories import SiteFactory
from .conftest import assert_consistent, by_body, counts, fixture_path, run_import, site_comments, site_shape


def test_isso_threads_comments_and_modes(db, isso_db):
    site = SiteFactory(key="isso")
    summary = run_import(site, "isso", isso_db)
    assert set(Subject.objects.filter(site=site).values_list("key", flat=True)) == {
        "/posts/first/",
        "/posts/%E7%AC%AC%E4%BA%8C/",  # as a browser's location.pathname has it (Isso's client stores that)
        "/posts/quiet/",
    }
    hello = by_body(site, "Hello **isso**")  # Isso keeps Markdown: stored as it is
    assert hello.content.html.startswith("<p>Hello <strong>isso</strong>")
    assert hello.created_at == datetime(2021, 6, 1, 10, 0, 0, 250000, tzinfo=UTC)
    reply = by_body(site, "A reply with")
    assert reply.reply_to_id == hello.pk and reply.edited_at == datetime(2021, 6, 1, 12, tzinfo=UTC)
    assert "<li>a</li>" in reply.content.html
    placeholder = site_comments(site).get(status=Status.DELETED)  # Isso's mode 4, text emptied
    assert placeholder.content.body == "" and by_body(site, "Replying to a deleted").reply_to_id == placeholder.pk
    assert "&lt;script&gt;" in by_body(site, "Replying to a deleted").content.html
    assert by_body(site, "Please approve me").status == Status.PENDING
    assert (
        by_body(site, "Hello **isso**").author_id == by_body(site, "Replying to a deleted").author_id
    )  # Ann, any case
    assert by_body(site, "anonymous reply").author is None
    assert by_body(site, "中文评论").content.author_ip == "2001:db8::"
    assert summary.skipped == {"bad or missing date": 1, "unknown status": 1, "thread not in the file": 1}
    assert_consistent(site)


def test_isso_import_twice_changes_nothing(db, isso_db):
    site = SiteFactory(key="isso")
    run_import(site, "isso", isso_db)
    before = (site_shape(site), counts(site))
    assert run_import(site, "isso", isso_db).imported == 0
    assert (site_shape(site), counts(site)) == before


def test_remark42_backup_pages_become_subjects_and_pids_keep_the_tree(db):
    site = SiteFactory(key="r42")
    summary = run_import(site, "remark42", fixture_path("remark42.jsonl"))
    post = Subject.objects.get(site=site, key="/post/1/")  # the page's path: the widget's default key
    assert post.title == "Post one" and post.state == SubjectState.OPEN
    assert post.url == "https://r42.example/post/1/"
    assert Subject.objects.get(site=site, key="/closed/").state == SubjectState.CLOSED  # read_only
    first = by_body(site, "Original **markdown**")  # the Markdown the author wrote, not the rendered text
    assert first.pinned and first.created_at == datetime(2022, 2, 1, 16, 0, 0, 123456, tzinfo=UTC)
    html_only = by_body(site, "Only html here")
    assert html_only.content.body == "Only html here, *no orig*" and html_only.reply_to_id == first.pk
    assert html_only.edited_at == datetime(2022, 2, 1, 17, 5, tzinfo=UTC)
    deleted = site_comments(site).get(status=Status.DELETED)
    assert deleted.author is None and deleted.reply_to_id == html_only.pk  # Remark42's hard delete: nobody
    assert by_body(site, "深层回复").depth == 3
    gita = ExternalIdentity.objects.get(site=site, external_id="remark42:github_1").user
    assert gita.display_name == "Gita Hub" and gita.avatar_url == "https://r42.example/avatar/1.png"
    assert by_body(site, "No user").author is None
    assert summary.skipped == {
        "not valid JSON": 1,
        "not a JSON object": 1,
        "comment without an id": 1,
        "no thread": 1,
        "bad or missing date": 1,
        "duplicate comment id in the file (first kept)": 1,
    }
    assert summary.examples["not valid JSON"] == ["line 8"]
    assert_consistent(site)


def test_remark42_import_twice_changes_nothing(db):
    site = SiteFactory(key="r42")
    run_import(site, "remark42", fixture_path("remark42.jsonl"))
    before = (site_shape(site), counts(site))
    again = run_import(site, "remark42", fixture_path("remark42.jsonl"))
    assert again.imported == 0 and again.subjects_known == 2
    assert (site_shape(site), counts(site)) == before
