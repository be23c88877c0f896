"""The shared page cache (infra/pagecache.py): every write that changes what readers see
reaches the cached pages, signed-in readers share them with their own parts laid over, a miss
is rebuilt once however many readers ask at the same time, and hot pages stay in the process.

Each test reads a page first, so the cache holds it, then writes, then reads again: without the
invalidation the second read is the first one's copy. Run in both modes (Redis, and the
embedded default's local-memory cache)."""

from __future__ import annotations

import threading
import time

import pytest
from django.core.cache import cache
from django.db import connection

from comments import queries, services
from comments.models import Comment, Status, Visibility
from infra import cachestats, encoding, pagecache

from ..api.conftest import API
from ..factories import CommentFactory, UserFactory


def page(client, subject, **params):
    response = client.get(f"{API}/subjects/{subject.pk}/comments", {"limit": 20, **params})
    assert response.status_code == 200, response.content[:300]
    return response.json()["items"]


def ids(items):
    return [item["id"] for item in items]


class Hits:
    """The cache hits and misses of the requests made inside the block, in this thread."""

    def __enter__(self):
        self._start = (cachestats.counts.hits, cachestats.counts.misses)
        return self

    def __exit__(self, *exc):
        self.hits = cachestats.counts.hits - self._start[0]
        self.misses = cachestats.counts.misses - self._start[1]


def test_a_second_read_of_a_page_comes_from_the_cache_without_sql(api, subject, django_assert_num_queries):
    CommentFactory(subject=subject)
    with Hits() as first:
        page(api, subject, mode="flat")
    assert (first.hits, first.misses) == (0, 1)
    with django_assert_num_queries(0), Hits() as second:
        items = page(api, subject, mode="flat")
    assert (second.hits, second.misses) == (1, 0)
    assert len(items) == 1


def test_a_new_comment_shows_at_once_to_its_author_and_to_others(
    api, client_for, subject, user, django_capture_on_commit_callbacks
):
    first = CommentFactory(subject=subject)
    author = client_for(user)
    assert ids(page(api, subject, mode="flat")) == [first.pk]
    assert ids(page(author, subject, mode="flat")) == [first.pk]
    # A post drops the subject's pages when it commits (the test's transaction never does).
    with django_capture_on_commit_callbacks(execute=True):
        posted = author.post(f"{API}/subjects/{subject.pk}/comments", {"body": "fresh"}, format="json").json()
    assert ids(page(author, subject, mode="flat")) == [first.pk, posted["id"]]
    assert ids(page(api, subject, mode="flat")) == [first.pk, posted["id"]]


def test_an_edit_reaches_the_cached_page(api, client_for, subject, user):
    comment = CommentFactory(subject=subject, author=user, body="before")
    assert page(api, subject, mode="flat")[0]["body"] == "before"
    client_for(user).patch(f"{API}/comments/{comment.pk}", {"body": "after"}, format="json")
    assert page(api, subject, mode="flat")[0]["body"] == "after"


def test_a_delete_reaches_the_cached_page(api, client_for, subject, user):
    comment = CommentFactory(subject=subject, author=user)
    assert ids(page(api, subject, mode="flat")) == [comment.pk]
    assert client_for(user).delete(f"{API}/comments/{comment.pk}").status_code == 204
    assert page(api, subject, mode="flat") == []


@pytest.mark.parametrize("action, shown", [("reject", False), ("shadow", False), ("pin", True)])
def test_a_moderation_action_reaches_the_cached_page(api, client_for, subject, moderator, action, shown):
    older = CommentFactory(subject=subject)
    comment = CommentFactory(subject=subject)
    assert ids(page(api, subject, mode="two_level", sort="new")) == [comment.pk, older.pk]
    response = client_for(moderator).post(
        f"{API}/moderation/comments/{older.pk}/actions", {"action": action, "reason": "test"}, format="json"
    )
    assert response.status_code == 200, response.content
    # Pinned comments lead list 1; a rejected or shadowed one leaves it for the public.
    expected = [older.pk, comment.pk] if shown else [comment.pk]
    assert ids(page(api, subject, mode="two_level", sort="new")) == expected


def test_a_held_comment_approved_by_a_moderator_reaches_the_cached_page(api, client_for, subject, moderator):
    comment = CommentFactory(subject=subject)
    services.comment_set_status(comment_id=comment.pk, to_status=Status.PENDING)
    assert page(api, subject, mode="flat") == []
    client_for(moderator).post(f"{API}/moderation/comments/{comment.pk}/actions", {"action": "approve"}, format="json")
    assert ids(page(api, subject, mode="flat")) == [comment.pk]


def test_a_like_that_changes_hot_order_reaches_the_cached_page_after_the_flush(api, client_for, subject, redis_url):
    from likes.services import likes_flush

    older = CommentFactory(subject=subject)
    newer = CommentFactory(subject=subject)
    assert ids(page(api, subject, mode="two_level", sort="hot")) == [newer.pk, older.pk]
    for _ in range(2):
        assert client_for(UserFactory()).put(f"{API}/comments/{older.pk}/like").status_code == 200
    likes_flush()
    items = page(api, subject, mode="two_level", sort="hot")
    assert ids(items) == [older.pk, newer.pk]
    assert items[0]["like_count"] == 2


def test_a_like_written_to_the_database_reaches_the_cached_page(api, client_for, subject, no_redis):
    comment = CommentFactory(subject=subject)
    assert page(api, subject, mode="flat")[0]["like_count"] == 0
    client_for(UserFactory()).put(f"{API}/comments/{comment.pk}/like")
    assert page(api, subject, mode="flat")[0]["like_count"] == 1


def test_a_signed_in_reader_gets_their_liked_flags_over_the_shared_page(api, client_for, subject, like_store):
    liked, other = CommentFactory(subject=subject), CommentFactory(subject=subject)
    fan = client_for(UserFactory())
    fan.put(f"{API}/comments/{liked.pk}/like")
    page(api, subject, mode="flat")  # the shared page, built for the public
    with Hits() as read:
        items = {item["id"]: item for item in page(fan, subject, mode="flat")}
    assert read.hits == 1
    assert items[liked.pk]["liked"] is True and items[other.pk]["liked"] is False
    assert items[liked.pk]["like_count"] == 1
    assert not any(item["liked"] for item in page(api, subject, mode="flat"))


def test_a_signed_in_readers_miss_fills_the_shared_page_without_their_flags(api, client_for, subject, like_store):
    liked = CommentFactory(subject=subject)
    fan = client_for(UserFactory())
    fan.put(f"{API}/comments/{liked.pk}/like")
    assert page(fan, subject, mode="two_level")[0]["liked"] is True
    with Hits() as read:
        item = page(api, subject, mode="two_level")[0]
    assert read.hits == 1
    assert item["liked"] is False and item["like_count"] == 1


def test_the_author_of_a_pending_comment_sees_it_while_others_share_the_cached_page(api, client_for, subject, user):
    public = CommentFactory(subject=subject)
    held = CommentFactory(subject=subject, author=user)
    services.comment_set_status(comment_id=held.pk, to_status=Status.PENDING)
    other = client_for(UserFactory())
    assert ids(page(api, subject, mode="flat")) == [public.pk]
    assert ids(page(other, subject, mode="flat")) == [public.pk]
    mine = page(client_for(user), subject, mode="flat")
    assert ids(mine) == [public.pk, held.pk]
    assert mine[1]["status"] == Status.PENDING


def test_a_follow_that_makes_a_friends_only_comment_visible_reaches_the_reader(api, client_for, subject):
    author, reader = UserFactory(), UserFactory()
    public = CommentFactory(subject=subject)
    friends_only = CommentFactory(subject=subject, author=author, visibility=Visibility.FRIENDS)
    reader_client, author_client = client_for(reader), client_for(author)
    assert ids(page(reader_client, subject, mode="flat")) == [public.pk]
    reader_client.put(f"{API}/users/{author.pk}/follow")
    author_client.put(f"{API}/users/{reader.pk}/follow")
    assert ids(page(reader_client, subject, mode="flat")) == [public.pk, friends_only.pk]
    assert ids(page(api, subject, mode="flat")) == [public.pk]


def test_a_subject_state_change_reaches_the_cached_page(client_for, subject, moderator, api):
    CommentFactory(subject=subject)
    assert page(api, subject)[0]["depth"] == 0
    client_for(moderator).patch(f"{API}/subjects/{subject.pk}", {"mode": "flat"}, format="json")
    reply_target = Comment.objects.get(subject=subject)
    reply = CommentFactory(subject=subject, reply_to=reply_target)
    # Flat mode lists the reply beside its root; two-level would have folded it under it.
    assert ids(page(api, subject)) == [reply_target.pk, reply.pk]


def hot_flat_page(api, subject, settings) -> Comment:
    """A subject of one comment whose flat page has just become hot in this process."""
    settings.COMMENTS_HOT_PAGE_READS = 3
    settings.COMMENTS_HOT_PAGE_SECONDS = 60  # a slow run must not see the copy expire midway
    comment = CommentFactory(subject=subject)
    # Reads are counted per second: three that straddle a second's end can fall short of three a
    # second, so a few more make it hot whenever they run.
    for _ in range(6):
        page(api, subject, mode="flat")
    return comment


def test_a_hot_page_is_served_from_the_process_without_the_shared_cache(
    api, subject, settings, monkeypatch, django_capture_on_commit_callbacks
):
    comment = hot_flat_page(api, subject, settings)
    calls = []
    original = cache.get_many
    monkeypatch.setattr(cache, "get_many", lambda *a, **k: calls.append(a) or original(*a, **k))
    assert ids(page(api, subject, mode="flat")) == [comment.pk]
    assert calls == []
    # A write in this process drops its hot copies of the subject when it commits.
    with django_capture_on_commit_callbacks(execute=True):
        newer = CommentFactory(subject=subject)
    assert ids(page(api, subject, mode="flat")) == [comment.pk, newer.pk]
    assert len(calls) == 1


def test_a_hot_page_is_answered_before_drf_as_drf_answers_it(api, subject, settings, monkeypatch):
    from comments.api import views

    settings.COMMENTS_HOT_PAGE_READS = 3
    settings.COMMENTS_HOT_PAGE_SECONDS = 60  # a slow run must not see the copy expire midway
    CommentFactory(subject=subject)
    url, query = f"{API}/subjects/{subject.pk}/comments", {"limit": 20, "mode": "flat"}
    through_drf = api.get(url, query)
    for _ in range(5):  # now hot, whenever they run (see hot_flat_page)
        api.get(url, query)
    handled = []
    original = views.SubjectCommentsView.initial
    monkeypatch.setattr(views.SubjectCommentsView, "initial", lambda *a, **k: handled.append(1) or original(*a, **k))

    for accept in [None, "application/json", "text/html, */*;q=0.8", "application/*"]:
        hot = api.get(url, query, **({} if accept is None else {"HTTP_ACCEPT": accept}))
        assert hot.status_code == 200 and hot.content == through_drf.content
        for header in ("Content-Type", "Allow", "Vary"):
            assert hot[header] == through_drf[header]
    assert handled == []

    # Whoever DRF must look at takes DRF's road: a bearer token (here a bad one), a session, a
    # reader who accepts no JSON.
    assert api.get(url, query, HTTP_AUTHORIZATION="Bearer nonsense").status_code == 401
    assert api.get(url, query, HTTP_ACCEPT="text/html").status_code == 406
    api.cookies[settings.SESSION_COOKIE_NAME] = "no-such-session"
    assert api.get(url, query).content == through_drf.content
    assert len(handled) == 3


def test_a_page_read_rarely_is_not_kept_in_the_process(api, subject, settings):
    settings.COMMENTS_HOT_PAGE_READS = 1000
    CommentFactory(subject=subject)
    for _ in range(5):
        page(api, subject, mode="flat")
    assert pagecache.hot.hot_keys() == []


@pytest.mark.django_db(transaction=True)
def test_concurrent_misses_rebuild_a_page_once(subject, monkeypatch):
    CommentFactory(subject=subject)
    builds = []
    original = queries.modes.list_comments

    def slow_build(*args, **kwargs):
        builds.append(1)
        threading.Event().wait(0.05)  # long enough for every reader to miss meanwhile
        return original(*args, **kwargs)

    monkeypatch.setattr(queries.modes, "list_comments", slow_build)  # what the cached pages build with
    readers = 8
    start = threading.Barrier(readers)
    pages, errors = [], []

    def read():
        try:
            start.wait()
            answer = queries.list_comments_json(
                subject_id=subject.pk, user=None, mode="flat", sort=None, limit=20, cursor=None, replies=3
            )
            pages.append(answer.entry)
        except Exception as exc:  # noqa: BLE001 - reported by the assert below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=read) for _ in range(readers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(pages) == readers and len(set(pages)) == 1
    assert len(builds) == 1


def test_a_page_built_leaves_no_rebuild_flag_behind(subject, django_capture_on_commit_callbacks):
    # Kept in the same round trip as the entry; a flag left behind would make the next reader
    # after a write wait for a build nobody is making.
    CommentFactory(subject=subject)
    queries.list_comments_json(
        subject_id=subject.pk, user=None, mode="flat", sort=None, limit=20, cursor=None, replies=3
    )
    key = pagecache.entry_key(subject.pk, "api:flat::20:3:")
    assert cache.get(key) is not None
    assert cache.get(pagecache._flight_key(key)) is None

    with django_capture_on_commit_callbacks(execute=True):
        services.comment_create(subject=subject, author=UserFactory(), body="later words")
    with Hits() as reads:
        again = queries.list_comments_json(
            subject_id=subject.pk, user=None, mode="flat", sort=None, limit=20, cursor=None, replies=3
        )
    assert (reads.hits, reads.misses) == (0, 1) and b"later words" in again.entry
    assert cache.get(pagecache._flight_key(key)) is None


def test_with_the_cache_off_every_read_goes_to_the_database(api, subject, settings):
    settings.COMMENTS_PAGE_CACHE_TTL = 0
    CommentFactory(subject=subject)
    with Hits() as reads:
        page(api, subject, mode="flat")
        page(api, subject, mode="flat")
    assert (reads.hits, reads.misses) == (0, 0)


def embed_page(client, subject, **params):
    response = client.get("/embed/", {"site": subject.site.key, "key": subject.key, **params})
    assert response.status_code == 200, response.content[:300]
    return response.content.decode()


def test_the_widget_page_is_rendered_once_per_version_of_its_subject(
    client, subject, user, django_assert_num_queries, django_capture_on_commit_callbacks
):
    CommentFactory(subject=subject, body="first words")
    assert "first words" in embed_page(client, subject, lang="en")
    with django_assert_num_queries(0):
        again = embed_page(client, subject, lang="en")
    assert "first words" in again
    # Another language is another variant of the page.
    assert "1 条评论" in embed_page(client, subject, lang="zh-hans")
    with django_capture_on_commit_callbacks(execute=True):
        services.comment_create(subject=subject, author=user, body="second words")
    assert "second words" in embed_page(client, subject, lang="en")


def test_an_anonymous_client_cannot_make_a_widget_page_per_title_or_origin(client, subject):
    """Issue 33, F7: 300 titles made 299 cache entries. A started discussion shows its own title
    and address whatever the host's query says, and an origin that is not the site's is none,
    so they are one page in the cache."""
    subject.title, subject.url = "The stored title", "https://blog.example/post"
    subject.save()
    CommentFactory(subject=subject, body="first words")
    html = embed_page(client, subject, title="t0", url="https://elsewhere.example/0")
    assert 'data-title="The stored title"' in html and 'data-url="https://blog.example/post"' in html
    with Hits() as reads:
        for n in range(1, 30):
            made = embed_page(
                client, subject, title=f"t{n}", url=f"https://elsewhere.example/{n}", origin=f"https://x{n}.example"
            )
            assert 'data-title="The stored title"' in made and "x{n}.example" not in made
    assert (reads.hits, reads.misses) == (29, 0)


def test_a_discussion_nobody_started_shows_the_hosts_title(client, site):
    response = client.get("/embed/", {"site": site.key, "key": "not-yet", "title": "The host's title"})
    assert response.status_code == 200 and 'data-title="The host&#x27;s title"' in response.content.decode()


def test_a_moderators_decision_reaches_the_cached_widget_page(client, client_for, subject, moderator):
    comment = CommentFactory(subject=subject, body="doubtful words")
    assert "doubtful words" in embed_page(client, subject)
    client_for(moderator).post(f"{API}/moderation/comments/{comment.pk}/actions", {"action": "reject"}, format="json")
    assert "doubtful words" not in embed_page(client, subject)


def test_a_hot_page_is_answered_by_its_raw_query_until_the_subject_changes(
    api, subject, settings, monkeypatch, django_capture_on_commit_callbacks
):
    from comments.api import views

    comment = hot_flat_page(api, subject, settings)
    validations = []
    original = views.query_params
    monkeypatch.setattr(views, "query_params", lambda *a: validations.append(1) or original(*a))
    assert ids(page(api, subject, mode="flat")) == [comment.pk]
    assert validations == []
    with django_capture_on_commit_callbacks(execute=True):
        newer = CommentFactory(subject=subject)
    assert ids(page(api, subject, mode="flat")) == [comment.pk, newer.pk]
    assert validations == [1]


# --- pages built ahead -------------------------------------------------------------------------


def walk_page(subject, cursor=None) -> dict:
    """An anonymous reader's flat page of two, as the API view reads it."""
    read = queries.list_comments_json(
        subject_id=subject.pk, user=None, mode="flat", sort=None, limit=2, cursor=cursor, replies=3
    )
    return encoding.loads(read.entry)


def builds_ahead_done() -> None:
    """Wait for this process's pages built ahead (the builds are the test's subject, not its
    timing)."""
    for future, _ in list(pagecache.preloads._builds.values()):
        future.result(timeout=10)


@pytest.fixture
def preloading(settings):
    settings.COMMENTS_PAGE_PRELOAD = True
    yield
    pagecache.preloads.stop()  # no build outlives the test's rows, nor its connection the test


@pytest.mark.django_db(transaction=True)
def test_a_reader_who_follows_a_cursor_gets_the_next_page_built_ahead(subject, preloading, django_assert_num_queries):
    comments = [CommentFactory(subject=subject) for _ in range(6)]
    first = walk_page(subject)
    with Hits() as second_read:
        second = walk_page(subject, first["next_cursor"])
    assert (second_read.hits, second_read.misses) == (0, 1)
    builds_ahead_done()

    with django_assert_num_queries(0), Hits() as third_read:
        third = walk_page(subject, second["next_cursor"])

    assert (third_read.hits, third_read.misses) == (1, 0)  # before: a miss, built by this reader
    assert ids(first["items"] + second["items"] + third["items"]) == [c.pk for c in comments]


@pytest.mark.django_db(transaction=True)
def test_a_walk_is_built_two_pages_ahead_of_its_reader_and_no_further(subject, preloading):
    comments = [CommentFactory(subject=subject) for _ in range(10)]
    second = walk_page(subject, walk_page(subject)["next_cursor"])
    builds_ahead_done()
    assert len(pagecache.preloads._builds) == pagecache.PRELOAD_DEPTH == 2  # pages 3 and 4 (before: page 3)

    with Hits() as third_read:
        third = walk_page(subject, second["next_cursor"])
    builds_ahead_done()
    assert len(pagecache.preloads._builds) == 2  # pages 4 and 5: taking page 3 led on to page 5

    with Hits() as rest_read:
        fourth = walk_page(subject, third["next_cursor"])
        fifth = walk_page(subject, fourth["next_cursor"])
    builds_ahead_done()

    assert (third_read.hits, third_read.misses, rest_read.hits, rest_read.misses) == (1, 0, 2, 0)
    assert fifth["next_cursor"] is None and not pagecache.preloads._builds  # the list ended: nothing more
    assert ids(third["items"] + fourth["items"] + fifth["items"]) == [c.pk for c in comments[4:]]


@pytest.mark.django_db(transaction=True)
def test_a_first_page_leads_to_no_page_built_ahead(subject, preloading):
    [CommentFactory(subject=subject) for _ in range(4)]
    first = walk_page(subject)
    builds_ahead_done()
    with Hits() as second_read:
        walk_page(subject, first["next_cursor"])
    assert (second_read.hits, second_read.misses) == (0, 1)


@pytest.mark.django_db(transaction=True)
def test_a_page_built_ahead_before_a_write_is_not_served_after_it(subject, preloading):
    comments = [CommentFactory(subject=subject) for _ in range(5)]
    second = walk_page(subject, walk_page(subject)["next_cursor"])
    builds_ahead_done()  # the third page, [5], is built ahead

    new = services.comment_create(subject=subject, author=UserFactory(), body="late words")

    assert ids(walk_page(subject, second["next_cursor"])["items"]) == [comments[4].pk, new.pk]


@pytest.mark.django_db(transaction=True)
def test_a_process_builds_at_most_a_few_pages_ahead_at_once(subject, preloading):
    release = threading.Event()
    built = []

    def blocked_build(n):
        def build():
            release.wait(10)
            built.append(n)
            return b"{}"

        return build

    def page_after(n):
        return lambda entry: (f"v{n}", blocked_build(n))

    offered = [pagecache.preloads.offer(subject.pk, b"{}", page_after(n)) for n in range(4)]
    again = pagecache.preloads.offer(subject.pk, b"{}", page_after(0))
    release.set()
    builds_ahead_done()

    assert offered == [True] * pagecache.PRELOADS_BUILDING + [False] * (4 - pagecache.PRELOADS_BUILDING)
    assert again is False  # already being built
    assert sorted(built) == list(range(pagecache.PRELOADS_BUILDING))


@pytest.mark.django_db(transaction=True)
def test_a_page_built_ahead_that_the_reader_gave_up_waiting_for_counts_as_taken(subject, preloading, monkeypatch):
    # The walk goes on two pages beyond it, as beyond a page served.
    monkeypatch.setattr(pagecache, "PRELOAD_WAIT_SECONDS", 0.01)
    release = threading.Event()
    built = []

    def page_after(entry):
        n = int(entry.decode()) + 1

        def build():
            release.wait(10)
            built.append(n)
            return str(n).encode()

        return f"v{n}", build

    assert pagecache.preloads.offer(subject.pk, b"0", page_after)
    assert pagecache.preloads.take(pagecache.entry_key(subject.pk, "v1"), "any token") is None  # gave up
    release.set()
    deadline = time.monotonic() + 5
    while len(built) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    builds_ahead_done()

    assert built == [1, 2, 3]  # before: [1, 2], the page given up on still counted as ahead
