"""API.md, Lists: limits, cursors scoped to their list, and every item exactly once while new
comments arrive and likes change between page requests."""

from __future__ import annotations

import random

import pytest
from django.core import signing
from django.test import override_settings
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from comments import queries
from comments.models import Comment

from ..factories import CommentFactory, SubjectFactory, UserFactory, set_likes_many
from .conftest import API, assert_error, first_page, ids, set_likes, set_pinned, walk, walk_ids

CHURN_PAGES = 8
BAD_LIMITS = ["0", "-1", "101", "", "abc", str(10**30), "1.5", "\x00", "1e2", "9" * 2000]


# --- a world to page through ---------------------------------------------------------------


class World:
    """A subject with ``n_roots`` top-level comments (one pinned), threads of varying depth and
    likes, all written by ``author`` (plus a few by ``other``), and helpers to churn it."""

    def __init__(self, subject, author, other, n_roots=12, seed=7):
        self.subject = subject
        self.author = author
        self.other = other
        self.rng = random.Random(seed)
        self.roots = []
        self.all: list = []
        self.created: list = []
        for i in range(n_roots):
            root = self._post(author if i % 4 else other)
            self.roots.append(root)
            for _ in range(self.rng.randrange(0, 4)):
                self._post(author, reply_to=self.rng.choice(self._thread(root) + [root]))
        set_likes_many({c: self.rng.randrange(0, 30) for c in self.all})
        set_pinned(self.roots[5])
        self.big_root = self.roots[0]
        for _ in range(8):
            self._post(author, reply_to=self.rng.choice(self._thread(self.big_root) + [self.big_root]))
        self.created.clear()

    def _thread(self, root):
        return [c for c in self.all if c.root_id == root.pk]

    def _post(self, author, reply_to=None):
        c = CommentFactory(subject=self.subject, author=author, reply_to=reply_to)
        self.all.append(c)
        self.created.append(c)
        return c

    def churn(self, n):
        """Between two page requests (the first ``CHURN_PAGES`` of them, so that a list read
        oldest first still ends): a new top-level comment, replies (one in the big thread),
        and likes moved around so that the hot order changes."""
        if n >= CHURN_PAGES:
            return
        self._post(self.author)
        self._post(self.author, reply_to=self.rng.choice(self.roots))
        self._post(self.author, reply_to=self.rng.choice(self._thread(self.big_root) + [self.big_root]))
        counts = {c: self.rng.randrange(0, 200) for c in self.rng.sample(self.all, 3)}
        set_likes_many({**counts, self.rng.choice(self.roots): 1000 + n})

    def ids(self, pred=lambda c: True):
        return {c.pk for c in self.all if pred(c)}

    def in_subtree(self, top):
        path = Comment.objects.get(pk=top.pk).path
        return lambda c: Comment.objects.get(pk=c.pk).path.startswith(path)


@pytest.fixture
def world(subject, user, other_user, settings):
    settings.COMMENTS_HOT_LIMIT = 4
    return World(subject, user, other_user)


def assert_exactly_once(seen: list[int], initial: set[int], new: set[int]) -> None:
    duplicates = {i for i in seen if seen.count(i) > 1}
    assert not duplicates, f"repeated items: {duplicates}"
    missing = initial - set(seen)
    assert not missing, f"skipped items: {missing}"
    strangers = set(seen) - initial - new
    assert not strangers, f"items that should not be in this list: {strangers}"


def churning_walk(client, url, params, world, initial_pred, new_pred):
    initial = world.ids(initial_pred)
    world.created.clear()
    seen = walk_ids(client, url, params, between=world.churn)
    new = {c.pk for c in world.created if new_pred(c)}
    assert world.created, "the walk should have had at least one churn"
    assert_exactly_once(seen, initial, new)
    return seen, initial


# --- the cursor property -------------------------------------------------------------------


@pytest.mark.parametrize("limit", [1, 3, 7])
@pytest.mark.parametrize("sort", ["hot", "new", "old"])
def test_two_level_cursors_return_every_top_level_comment_once_while_comments_arrive(api, world, sort, limit):
    url = f"{API}/subjects/{world.subject.pk}/comments"
    top = lambda c: c.depth == 0  # noqa: E731
    seen, initial = churning_walk(api, url, {"sort": sort, "limit": limit, "mode": "two_level"}, world, top, top)
    assert seen[0] == world.roots[5].pk  # pinned first
    if sort != "hot":
        old = [i for i in seen if i in initial][1:]
        assert old == sorted(old, reverse=(sort == "new"))


@pytest.mark.parametrize("limit", [1, 4])
@pytest.mark.parametrize("mode, sort", [("flat", "old"), ("flat", "new"), ("stacked", "old"), ("stacked", "new")])
def test_flat_and_stacked_cursors_return_every_comment_once_while_comments_arrive(api, world, mode, sort, limit):
    url = f"{API}/subjects/{world.subject.pk}/comments"
    seen, initial = churning_walk(
        api, url, {"mode": mode, "sort": sort, "limit": limit}, world, lambda c: True, lambda c: True
    )
    old = [i for i in seen if i in initial]
    assert old == sorted(old, reverse=(sort == "new"))


@pytest.mark.parametrize("limit", [1, 3])
@pytest.mark.parametrize("sort", ["old", "new", "hot"])
def test_replies_cursors_return_every_reply_once_while_replies_arrive(api, world, sort, limit):
    root = world.big_root
    in_thread = lambda c: c.root_id == root.pk  # noqa: E731
    seen, initial = churning_walk(
        api, f"{API}/comments/{root.pk}/replies", {"sort": sort, "limit": limit}, world, in_thread, in_thread
    )
    if sort != "hot":
        old = [i for i in seen if i in initial]
        assert old == sorted(old, reverse=(sort == "new"))


@pytest.mark.parametrize("limit", [1, 3])
def test_tree_cursors_return_every_comment_of_the_subtree_once_while_replies_arrive(api, world, limit):
    root = world.big_root
    in_tree = world.in_subtree(root)
    seen, initial = churning_walk(api, f"{API}/comments/{root.pk}/tree", {"limit": limit}, world, in_tree, in_tree)
    paths = {c.pk: c.path for c in Comment.objects.filter(pk__in=seen)}
    old = [paths[i] for i in seen if i in initial]
    assert old == sorted(old)


@pytest.mark.parametrize("limit", [1, 5])
def test_user_comment_cursors_return_every_comment_once_while_the_user_posts(api, world, limit):
    mine = lambda c: c.author.pk == world.author.pk  # noqa: E731
    seen, initial = churning_walk(api, f"{API}/users/{world.author.pk}/comments", {"limit": limit}, world, mine, mine)
    old = [i for i in seen if i in initial]
    assert old == sorted(old, reverse=True)


@pytest.mark.parametrize(
    "params",
    [
        {"sort": "hot"},
        {"sort": "new"},
        {"sort": "old"},
        {"mode": "flat"},
        {"mode": "flat", "sort": "new"},
        {"mode": "stacked"},
    ],
    ids=str,
)
def test_paging_through_a_quiet_list_gives_the_same_sequence_as_one_big_page(api, world, params):
    url = f"{API}/subjects/{world.subject.pk}/comments"
    whole = first_page(api, url, {**params, "limit": 100})
    assert whole["next_cursor"] is None
    for limit in (1, 2, 5, 13):
        assert walk_ids(api, url, {**params, "limit": limit}) == ids(whole["items"]), limit


@pytest.mark.parametrize("sort", ["old", "new", "hot"])
def test_paging_through_quiet_replies_gives_the_same_sequence_as_one_big_page(api, world, sort):
    url = f"{API}/comments/{world.big_root.pk}/replies"
    whole = first_page(api, url, {"sort": sort, "limit": 100})
    assert whole["next_cursor"] is None and whole["items"]
    for limit in (1, 2, 3, 5):
        assert walk_ids(api, url, {"sort": sort, "limit": limit}) == ids(whole["items"])


def test_a_page_of_exactly_the_remaining_items_may_end_the_list(api, user, subject):
    roots = [CommentFactory(subject=subject, author=user) for _ in range(4)]
    pages = walk(api, f"{API}/subjects/{subject.pk}/comments", {"sort": "old", "limit": 2})
    assert [ids(p) for p in pages if p] == [[roots[0].pk, roots[1].pk], [roots[2].pk, roots[3].pk]]


# --- hypothesis: two_level hot with random likes, limits and arrivals ------------------------


@hsettings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    likes=st.lists(st.integers(0, 6), min_size=1, max_size=14),
    pinned=st.sets(st.integers(0, 13), max_size=2),
    limit=st.integers(1, 6),
    hot_limit=st.integers(1, 6),
    sort=st.sampled_from(["hot", "new", "old"]),
    arrivals=st.lists(st.tuples(st.booleans(), st.integers(0, 13), st.integers(0, 50)), max_size=6),
)
def test_two_level_pagination_property(db, likes, pinned, limit, hot_limit, sort, arrivals):
    author = UserFactory(username="hypo")
    subject = SubjectFactory()
    roots = []
    for n in likes:
        roots.append(CommentFactory(subject=subject, author=author))
        set_likes(roots[-1], n)
    for i in pinned:
        if i < len(roots):
            set_pinned(roots[i])
    initial = {r.pk for r in roots}
    new = set()
    steps = iter(arrivals)

    def between(n):
        step = next(steps, None)
        if step is None:
            return
        top_level, target, like = step
        if top_level:
            new.add(CommentFactory(subject=subject, author=author).pk)
        else:
            CommentFactory(subject=subject, author=author, reply_to=roots[target % len(roots)])
        set_likes(roots[(target + 1) % len(roots)], like)

    from rest_framework.test import APIClient

    with override_settings(COMMENTS_HOT_LIMIT=hot_limit):
        seen = walk_ids(
            APIClient(), f"{API}/subjects/{subject.pk}/comments", {"sort": sort, "limit": limit}, between=between
        )
    assert_exactly_once(seen, initial, new)
    pinned_ids = {roots[i].pk for i in pinned if i < len(roots)}
    assert set(seen[: len(pinned_ids)]) == pinned_ids


# --- limits --------------------------------------------------------------------------------


def list_urls(world):
    return {
        "subject": f"{API}/subjects/{world.subject.pk}/comments",
        "subject-flat": f"{API}/subjects/{world.subject.pk}/comments?mode=flat",
        "subject-stacked": f"{API}/subjects/{world.subject.pk}/comments?mode=stacked",
        "replies": f"{API}/comments/{world.big_root.pk}/replies",
        "tree": f"{API}/comments/{world.big_root.pk}/tree",
        "user": f"{API}/users/{world.author.pk}/comments",
    }


LISTS = ["subject", "subject-flat", "subject-stacked", "replies", "tree", "user"]


def _get(client, url, params):
    if "?" in url:
        base, query = url.split("?")
        params = {**dict(p.split("=") for p in query.split("&")), **params}
        url = base
    return client.get(url, params)


@pytest.mark.parametrize("which", LISTS)
def test_limit_defaults_to_twenty(api, subject, user, which, settings):
    settings.COMMENTS_HOT_LIMIT = 4
    w = World(subject, user, user, n_roots=25)
    for _ in range(22):
        CommentFactory(subject=subject, author=user, reply_to=w.big_root)
    body = _get(api, list_urls(w)[which], {}).json()
    assert len(body["items"]) == 20
    assert body["next_cursor"] is not None


@pytest.mark.parametrize("which", LISTS)
def test_limits_of_one_and_one_hundred_are_accepted(api, world, which):
    for limit in (1, 100):
        response = _get(api, list_urls(world)[which], {"limit": str(limit)})
        assert response.status_code == 200, (limit, response.content[:300])
        assert 0 < len(response.json()["items"]) <= limit


@pytest.mark.parametrize("which", LISTS)
def test_a_limit_outside_one_to_one_hundred_or_not_a_number_is_invalid(api, world, which):
    failures = []
    for limit in BAD_LIMITS:
        response = _get(api, list_urls(world)[which], {"limit": limit})
        try:
            error = assert_error(response, 400, "invalid")
            assert "limit" in error.get("fields", {}), error
        except AssertionError as exc:
            failures.append(f"limit={limit[:30]!r}: {exc}")
    assert not failures, "\n".join(failures)


# --- cursors -------------------------------------------------------------------------------


def _tamper(cursor: str) -> str:
    i = len(cursor) // 2
    return cursor[:i] + ("A" if cursor[i] != "A" else "B") + cursor[i + 1 :]


@pytest.mark.parametrize("which", LISTS)
def test_a_malformed_cursor_is_invalid(api, world, which):
    url = list_urls(world)[which]
    good = _get(api, url, {"limit": 1}).json()["next_cursor"]
    assert good
    bad = [
        "garbage",
        "",
        "\x00",
        "a" * 5000,  # longer than any cursor (4,096); a URL past 8,000 bytes is 414 (test_errors)
        _tamper(good),
        good[:-3],
        good + "x",
        "." * 40,
        ":::",
        signing.dumps({"s": "x", "p": {}}, salt="another salt"),
        signing.dumps([1, 2, 3], salt="comments.cursor", compress=True),
        "%ff%fe",
    ]
    for cursor in bad:
        response = _get(api, url, {"cursor": cursor, "limit": 1})
        assert_error(response, 400, "invalid")


def _cursor(client, url, params):
    body = _get(client, url, {**params, "limit": 1}).json()
    assert body["next_cursor"], body
    return body["next_cursor"]


def test_a_cursor_from_another_subject_is_invalid(api, world, user):
    other = SubjectFactory(site=world.subject.site)
    for _ in range(3):
        CommentFactory(subject=other, author=user)
    for params in ({"sort": "hot"}, {"sort": "new"}, {"mode": "flat"}, {"mode": "stacked"}):
        cursor = _cursor(api, f"{API}/subjects/{world.subject.pk}/comments", params)
        response = api.get(f"{API}/subjects/{other.pk}/comments", {**params, "cursor": cursor})
        assert_error(response, 400, "invalid")


@pytest.mark.parametrize(
    "made_with, used_with",
    [
        ({"sort": "hot"}, {"sort": "new"}),
        ({"sort": "new"}, {"sort": "old"}),
        ({"sort": "old"}, {"sort": "hot"}),
        ({"mode": "flat"}, {"mode": "stacked"}),
        ({"mode": "stacked"}, {"mode": "flat"}),
        ({"mode": "flat", "sort": "new"}, {"mode": "flat", "sort": "old"}),
        ({"mode": "flat", "sort": "old"}, {"mode": "two_level", "sort": "old"}),
        ({"mode": "two_level", "sort": "new"}, {"mode": "flat", "sort": "new"}),
    ],
    ids=str,
)
def test_a_cursor_made_for_another_sort_or_mode_is_invalid(api, world, made_with, used_with):
    url = f"{API}/subjects/{world.subject.pk}/comments"
    cursor = _cursor(api, url, made_with)
    assert_error(api.get(url, {**used_with, "cursor": cursor}), 400, "invalid")


def test_a_cursor_made_for_another_endpoint_is_invalid(api, world, other_user):
    urls = list_urls(world)
    root = world.big_root
    replies_cursor = _cursor(api, urls["replies"], {})
    tree_cursor = _cursor(api, urls["tree"], {})
    user_cursor = _cursor(api, urls["user"], {})
    subject_cursor = _cursor(api, urls["subject"], {"sort": "old"})
    flat_cursor = _cursor(api, urls["subject"], {"mode": "flat"})
    attempts = [
        (urls["tree"], replies_cursor),
        (urls["replies"], tree_cursor),
        (urls["user"], replies_cursor),
        (urls["user"], flat_cursor),
        (urls["replies"], subject_cursor),
        (urls["tree"], user_cursor),
        (urls["subject"] + "?mode=flat", user_cursor),
        (urls["subject"] + "?mode=flat", tree_cursor),
        (urls["subject"] + "?sort=old", replies_cursor),
        (f"{API}/users/{other_user.pk}/comments", user_cursor),
    ]
    other_root = world.roots[1]
    CommentFactory(subject=world.subject, author=other_user, reply_to=other_root)
    attempts.append((f"{API}/comments/{other_root.pk}/replies", replies_cursor))
    attempts.append((f"{API}/comments/{other_root.pk}/tree", tree_cursor))
    for url, cursor in attempts:
        assert_error(_get(api, url, {"cursor": cursor}), 400, "invalid")
    assert root  # the big thread is the one the cursors came from


MALFORMED_POSITIONS = [
    {"h": "x"},
    {"h": [1, "2"]},
    {"h": [], "o": -1},
    {"h": [], "o": "1"},
    {"h": [], "o": 0, "k": "abc"},
    {"k": "abc"},
    {"k": [1]},
    {"k": None, "o": None},
    {},
]


def test_a_signed_cursor_with_a_malformed_position_is_invalid_not_a_server_error(api, world):
    s = world.subject.pk
    scopes = [
        (f"{API}/subjects/{s}/comments", {"sort": "hot"}, f"two_level:{s}:hot:3"),
        (f"{API}/subjects/{s}/comments", {"mode": "flat"}, f"flat:{s}:old"),
        (f"{API}/comments/{world.big_root.pk}/replies", {"sort": "hot"}, f"replies:{world.big_root.pk}:hot"),
        (f"{API}/comments/{world.big_root.pk}/tree", {}, f"tree:{world.big_root.pk}"),
        (f"{API}/users/{world.author.pk}/comments", {}, f"user:{world.author.pk}"),
    ]
    for (url, params, scope), position in [(x, p) for x in scopes for p in MALFORMED_POSITIONS]:
        response = api.get(url, {**params, "cursor": queries.encode_cursor(scope=scope, position=position)})  # type: ignore[arg-type]  # malformed on purpose
        assert response.status_code in (200, 400), (url, position, response.status_code, response.content[:300])
        if response.status_code == 400:
            assert_error(response, 400, "invalid")
