"""Importing WordPress's WXR export."""

from __future__ import annotations

from datetime import UTC, datetime

from comments.models import ExternalIdentity, Status, Subject, SubjectState
from moderation.models import ReviewTask

from ..factories import SiteFactory
from .conftest import assert_consistent, by_body, counts, fixture_path, run_import, site_shape


def test_wordpress_posts_with_comments_become_subjects_keyed_by_their_permalinks_path(db):
    site = SiteFactory(key="wp")
    summary = run_import(site, "wordpress", fixture_path("wordpress.xml"))
    hello = Subject.objects.get(site=site, key="/2018/01/hello-world/")  # the widget's default key there
    assert hello.title == "Hello world!" and hello.state == SubjectState.OPEN
    assert hello.url == "https://wp.example/2018/01/hello-world/"
    second = Subject.objects.get(site=site, key="/2019/second/")
    assert second.title == "第二篇文章" and second.state == SubjectState.CLOSED
    assert not Subject.objects.filter(site=site, title="About").exists()  # a page without comments
    assert summary.subjects_created == 2 and summary.imported == 8
    assert_consistent(site)


def test_wordpress_comment_parent_keeps_the_tree_and_statuses_map(db):
    site = SiteFactory(key="wp")
    run_import(site, "wordpress", fixture_path("wordpress.xml"))
    first, thanks = by_body(site, "Hi, this is a comment"), by_body(site, "Thanks!")
    assert thanks.reply_to_id == first.pk and thanks.depth == 1
    assert by_body(site, "Awaiting moderation").status == Status.PENDING
    assert by_body(site, "cheap pills").status == Status.REJECTED
    regret = by_body(site, "Regret.")
    assert regret.status == Status.DELETED  # trash, kept as a placeholder for its reply
    assert by_body(site, "回复一条被删除的评论").reply_to_id == regret.pk
    assert first.created_at == datetime(2018, 1, 1, 10, tzinfo=UTC)  # the GMT date


def test_wordpress_held_comments_wait_in_the_review_queue(db):
    site = SiteFactory(key="wp")
    run_import(site, "wordpress", fixture_path("wordpress.xml"))
    task = ReviewTask.objects.get(comment=by_body(site, "Awaiting moderation"))
    assert task.state == "open" and task.reasons == ["import:wordpress"]


def test_wordpress_line_breaks_count_and_html_is_sanitised(db):
    site = SiteFactory(key="wp")
    run_import(site, "wordpress", fixture_path("wordpress.xml"))
    first = by_body(site, "Hi, this is a comment").content
    assert first.html.startswith("<p>Hi, this is a comment.<br>\nTo get started")
    assert first.html.count("<p>") == 2
    thanks = by_body(site, "Thanks!").content
    assert thanks.html == "<p>Thanks! <strong>Bold</strong> <em>and</em> safe.</p>"
    listed = by_body(site, "Anonymous, with a list").content
    assert "<li>one</li>" in listed.html and "<code>code_here()</code>" in listed.html


def test_wordpress_registered_users_and_guests(db):
    site = SiteFactory(key="wp")
    run_import(site, "wordpress", fixture_path("wordpress.xml"))
    assert (
        by_body(site, "Thanks!").author == ExternalIdentity.objects.get(site=site, external_id="wordpress:user:1").user
    )
    guest = by_body(site, "Hi, this is a comment").author
    assert by_body(site, "Same guest").author_id == guest.pk  # the same e-mail, whatever its case
    assert by_body(site, "Anonymous, with a list").author is None  # no name, no e-mail


def test_wordpress_pingbacks_and_malformed_comments_are_reported(db):
    site = SiteFactory(key="wp")
    summary = run_import(site, "wordpress", fixture_path("wordpress.xml"))
    assert summary.skipped == {
        "pingback or trackback": 1,
        "bad or missing date": 1,
        "unknown status": 1,
        "comment without an id": 1,
        "duplicate comment id in the file (first kept)": 1,
    }
    assert summary.examples["unknown status"] == ["comment 9"]


def test_wordpress_import_twice_changes_nothing(db):
    site = SiteFactory(key="wp")
    run_import(site, "wordpress", fixture_path("wordpress.xml"))
    before = (site_shape(site), counts(site), ReviewTask.objects.count())
    again = run_import(site, "wordpress", fixture_path("wordpress.xml"))
    assert again.imported == 0 and again.skipped["already imported"] == 8
    assert (site_shape(site), counts(site), ReviewTask.objects.count()) == before
