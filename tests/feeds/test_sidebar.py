"""The recent and top comments of a site (the data behind a "latest comments" sidebar): only
published public comments of its open subjects, as an anonymous reader sees them, paged as
every list (each once, to the end), errors in the contract's shape, queries that do not grow
with the page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from comments.models import Comment
from comments.services import comment_soft_delete, site_store, subject_update

from ..api.conftest import API
from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory


def walk(api, url: str, **params) -> list[dict]:
    items, cursor = [], None
    while True:
        answer = api.get(url, {**params, **({"cursor": cursor} if cursor else {})})
        assert answer.status_code == 200, answer.json()
        items += answer.json()["items"]
        cursor = answer.json()["next_cursor"]
        if cursor is None:
            return items


@pytest.fixture
def staff(db):
    return UserFactory(is_staff=True)


def test_recent_lists_only_what_an_anonymous_reader_sees_in_open_subjects(api, site, staff):
    from moderation.actions import comment_moderate

    a, b, closed = (
        SubjectFactory(site=site, url="https://host.example/a"),
        SubjectFactory(site=site),
        SubjectFactory(site=site),
    )
    shown = [CommentFactory(subject=a), CommentFactory(subject=b)]
    reply = CommentFactory(subject=a, reply_to=shown[0])
    CommentFactory(subject=a, visibility="friends")
    shadowed = CommentFactory(subject=b)
    comment_moderate(comment_id=shadowed.pk, actor=staff, action="shadow")
    gone = CommentFactory(subject=b)
    comment_soft_delete(comment=gone, actor=gone.author)
    site.moderation = "pre"
    site_store(site=site)
    CommentFactory(subject=b)  # pending
    site.moderation = "post"
    site_store(site=site)
    CommentFactory(subject=closed)
    subject_update(subject=closed, actor=staff, state="closed")
    CommentFactory(subject=SubjectFactory(site=SiteFactory()))  # another site

    items = walk(api, f"{API}/sites/{site.key}/comments/recent", limit=2)
    assert [c["id"] for c in items] == [reply.pk, shown[1].pk, shown[0].pk]
    first = items[0]
    assert first["subject"] == {"id": a.pk, "key": a.key, "title": a.title, "url": "https://host.example/a"}
    assert first["status"] == "published" and first["liked"] is False and first["html"]
    assert items[1]["subject"]["url"] is None


def test_top_lists_the_most_liked_of_the_window_each_once(api, site, settings, no_redis):
    from likes.services import like_set

    subject = SubjectFactory(site=site)
    comments = [CommentFactory(subject=subject) for _ in range(7)]
    likes = [3, 0, 5, 3, 1, 5, 0]
    for comment, n in zip(comments, likes, strict=True):
        for _ in range(n):
            like_set(user=UserFactory(), comment_id=comment.pk, liked=True)
    old = CommentFactory(subject=subject)
    Comment.objects.filter(pk=old.pk).update(created_at=old.created_at - timedelta(days=200), like_count=99)

    items = walk(api, f"{API}/sites/{site.key}/comments/top", limit=3)
    expected = sorted(comments, key=lambda c: (-likes[comments.index(c)], -c.pk))
    assert [c["id"] for c in items] == [c.pk for c in expected]
    assert [c["like_count"] for c in items] == sorted(likes, reverse=True)
    assert old.pk in [c["id"] for c in walk(api, f"{API}/sites/{site.key}/comments/top", days=365)]


@pytest.mark.parametrize("query", ["limit=0", "limit=101", "limit=x", "cursor=garbage", "days=0", "days=366", "days=x"])
def test_bad_parameters_are_400_in_the_contracts_shape(api, site, query):
    kind = "top" if "days" in query else "recent"
    answer = api.get(f"{API}/sites/{site.key}/comments/{kind}?{query}")
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "invalid"


def test_a_cursor_of_another_list_is_refused(api, site):
    subject = SubjectFactory(site=site)
    for _ in range(3):
        CommentFactory(subject=subject)
    cursor = api.get(f"{API}/sites/{site.key}/comments/recent?limit=1").json()["next_cursor"]
    assert api.get(f"{API}/sites/{site.key}/comments/top?cursor={cursor}").status_code == 400
    other = SiteFactory()
    assert api.get(f"{API}/sites/{other.key}/comments/recent?cursor={cursor}").status_code == 400


def test_an_unknown_site_is_404(api, db):
    for kind in ("recent", "top"):
        answer = api.get(f"{API}/sites/nope/comments/{kind}")
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found"


def test_the_sites_own_pages_may_read_it_across_origins(api, db):
    site = SiteFactory(allowed_origins=["https://host.example"])
    ours = api.get(f"{API}/sites/{site.key}/comments/recent", HTTP_ORIGIN="https://host.example")
    assert ours["Access-Control-Allow-Origin"] == "https://host.example"
    assert "Origin" in ours["Vary"] and "public" in ours["Cache-Control"]
    theirs = api.get(f"{API}/sites/{site.key}/comments/recent", HTTP_ORIGIN="https://evil.example")
    assert "Access-Control-Allow-Origin" not in theirs


@pytest.mark.parametrize("kind", ["recent", "top"])
def test_the_queries_of_a_page_do_not_grow_with_it(api, site, kind):
    def count(limit: int) -> int:
        with CaptureQueriesContext(connection) as ran:
            assert api.get(f"{API}/sites/{site.key}/comments/{kind}?limit={limit}").status_code == 200
        return len(ran.captured_queries)

    for n in range(25):
        CommentFactory(subject=SubjectFactory(site=site), author=UserFactory(), body=f"c{n}")
    assert count(1) == count(20) <= 4


def test_a_first_page_of_top_is_read_once_while_it_is_kept(api, site, settings):
    subject = SubjectFactory(site=site)
    kept = CommentFactory(subject=subject)
    url = f"{API}/sites/{site.key}/comments/top?limit=5"
    assert [c["id"] for c in api.get(url).json()["items"]] == [kept.pk]
    CommentFactory(subject=subject)
    with CaptureQueriesContext(connection) as ran:
        again = api.get(url)
    assert [c["id"] for c in again.json()["items"]] == [kept.pk]  # up to FEEDS_MAX_AGE old
    assert not [q for q in ran.captured_queries if "comment_index" in q["sql"]]
    assert again["Content-Type"] == "application/json" and "public" in again["Cache-Control"]
    assert len(api.get(f"{API}/sites/{site.key}/comments/top?limit=6").json()["items"]) == 2  # another size: read


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "data:text/html,<script>alert(1)</script>", " https://x.example/"]
)
def test_a_subjects_url_that_is_no_web_page_is_shown_as_none(api, site, url):
    # Stored as an import or the admin gave it; a sidebar would make it a link.
    CommentFactory(subject=SubjectFactory(site=site, url=url))
    [item] = walk(api, f"{API}/sites/{site.key}/comments/recent")
    assert item["subject"]["url"] is None
