"""DESIGN.md performance targets, as query bounds: a list page costs a fixed number of SQL
queries, whatever the page size, depth or number of replies."""

from __future__ import annotations

import pytest

from ..factories import CommentFactory, UserFactory
from .conftest import API

MAX_QUERIES = 6


def populate(subject, roots: int, replies_each: int):
    authors = [UserFactory(username=f"qa{i}") for i in range(5)]
    for i in range(roots):
        root = CommentFactory(subject=subject, author=authors[i % 5])
        parent = root
        for j in range(replies_each):
            # half direct replies, half deeper, so chains and previews have work to do
            parent = CommentFactory(subject=subject, author=authors[(i + j) % 5], reply_to=parent if j % 2 else root)


@pytest.fixture
def page_subject(subject):
    populate(subject, roots=20, replies_each=5)
    return subject


@pytest.fixture
def big_subject(subject):
    populate(subject, roots=100, replies_each=5)
    return subject


def _get_page(api, subject, params, django_assert_max_num_queries, expected_items):
    with django_assert_max_num_queries(MAX_QUERIES):
        response = api.get(f"{API}/subjects/{subject.pk}/comments", params)
    assert response.status_code == 200
    assert len(response.json()["items"]) == expected_items
    return response.json()


@pytest.mark.parametrize("sort", ["hot", "new", "old"])
def test_a_two_level_first_page_takes_at_most_six_queries(api, page_subject, django_assert_max_num_queries, sort):
    body = _get_page(
        api,
        page_subject,
        {"mode": "two_level", "sort": sort, "limit": 20, "replies": 3},
        django_assert_max_num_queries,
        20,
    )
    assert all(len(item["replies"]) == 3 for item in body["items"])


@pytest.mark.parametrize("mode", ["flat", "stacked"])
def test_a_flat_or_stacked_first_page_takes_at_most_six_queries(api, page_subject, django_assert_max_num_queries, mode):
    body = _get_page(api, page_subject, {"mode": mode, "limit": 20}, django_assert_max_num_queries, 20)
    if mode == "stacked":
        assert any(len(item["chain"]) >= 2 for item in body["items"])


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"mode": "two_level", "sort": "hot", "replies": 3}, 100),
        ({"mode": "two_level", "sort": "new", "replies": 10}, 100),
        ({"mode": "flat"}, 100),
        ({"mode": "stacked"}, 100),
    ],
    ids=str,
)
@pytest.mark.parametrize("viewer", ["anonymous", "signed_in"])
def test_a_first_page_of_one_hundred_takes_at_most_six_queries(
    api, client_for, big_subject, django_assert_max_num_queries, params, expected, viewer
):
    # Signed in, the bearer token costs a query and the viewer's likes ride on the contents.
    client = api if viewer == "anonymous" else client_for(UserFactory(username="reader"))
    _get_page(client, big_subject, {**params, "limit": 100}, django_assert_max_num_queries, expected)


@pytest.mark.parametrize(
    "params",
    [{"mode": "two_level", "sort": "hot"}, {"mode": "two_level", "sort": "new"}, {"mode": "flat"}, {"mode": "stacked"}],
    ids=str,
)
def test_a_later_page_costs_what_the_first_page_costs(api, page_subject, django_assert_max_num_queries, params):
    first = api.get(f"{API}/subjects/{page_subject.pk}/comments", {**params, "limit": 7}).json()
    second = first
    for _ in range(2):
        assert second["next_cursor"]
        with django_assert_max_num_queries(MAX_QUERIES):
            response = api.get(
                f"{API}/subjects/{page_subject.pk}/comments", {**params, "limit": 7, "cursor": second["next_cursor"]}
            )
        assert response.status_code == 200
        second = response.json()
        assert 0 < len(second["items"]) <= 7


def test_replies_tree_and_user_lists_are_query_bounded(api, page_subject, django_assert_max_num_queries):
    from comments.models import Comment

    root = Comment.objects.filter(subject=page_subject, depth=0).first()
    author = Comment.objects.filter(subject=page_subject).first().author
    for url in (
        f"{API}/comments/{root.pk}/replies",
        f"{API}/comments/{root.pk}/replies?sort=hot",
        f"{API}/comments/{root.pk}/tree",
        f"{API}/users/{author.pk}/comments",
    ):
        with django_assert_max_num_queries(MAX_QUERIES):
            response = api.get(url)
        assert response.status_code == 200 and response.json()["items"]


def test_a_flat_page_reads_its_comments_with_their_content_in_one_statement(
    api, page_subject, django_assert_num_queries, settings
):
    # The page cache off: what is counted is the build. The subject, then the rows with their
    # authors, what they reply to and their content (before: a second statement for the content).
    settings.COMMENTS_PAGE_CACHE_TTL = 0
    with django_assert_num_queries(2):
        response = api.get(f"{API}/subjects/{page_subject.pk}/comments", {"mode": "flat", "limit": 20})
    items = response.json()["items"]
    assert len(items) == 20 and all(item["body"] and item["html"] for item in items)
