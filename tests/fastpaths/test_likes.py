"""Like state in Redis (``LIKES_REDIS_URL``; unset or empty: the database road, every like
written to the database at once) and partial like states (a popular comment's first like after
Redis lost its state starts from the rows' count instead of loading every liker;
``likes.state_sync.FIRST_MEET_LIKERS`` decides what counts as popular; ``LIKES_PARTIAL_STATES``
off loads such a state whole instead) (docs/fast-paths.md).

Guarantee: every like and unlike answers the count and the flag the database road answers; a
reader's ``liked`` flags and the counts are the same; once flushed, the rows are the same.

The scenario runs on twin worlds (the same people liking the same places in the same order):
Redis with partial states, Redis with whole states only, and the database. Left out of the
comparison: ``liked_at`` of the likers list (the moment of each twin's like; and Redis keeps
likes to the millisecond) and the likers list's cursors (which carry those times)."""

from __future__ import annotations

import dataclasses

import pytest

from infra import redislink
from likes import state_sync
from likes.services import likes_flush

from ..factories import UserFactory
from .scenario import API, assert_same, bearer, make_people, make_world, pages

pytestmark = pytest.mark.django_db(transaction=True)

LIKERS = 5
# (liker, comment's place, like or unlike): likes piling on comment 0, unlikes, likes again.
SCRIPT = [(n, 0, True) for n in range(LIKERS)] + [
    (0, 1, True),
    (1, 1, True),
    (0, 0, False),
    (0, 0, False),
    (2, 2, True),
    (2, 2, False),
    (0, 0, True),
]
# After Redis loses the states: likes and unlikes of comments that already have likers.
AFTER_THE_LOSS = [(3, 0, False), (4, 1, True), (0, 0, True), (1, 1, False), (4, 1, True)]


def like_scenario(people, likers, *, lose_states) -> dict:
    """The script on a new twin world: each answer, then every liker's flat pages, the likers
    lists, the anonymous pages after the flush; then (``lose_states``: Redis loses its like
    states first) the rest of the script and the same reads again."""
    world = make_world(mode="flat", people=people)
    comments = world.comments
    clients = [bearer(user) for user in likers]
    answers: dict = {}

    def act(script, step):
        for n, (who, place, liked) in enumerate(script):
            url = f"{API}/comments/{comments[place].pk}/like"
            response = clients[who].put(url) if liked else clients[who].delete(url)
            answers[(step, n)] = (response.status_code, response.json())

    def reads(step):
        for who, client in enumerate(clients):
            answers[(step, "pages", who)] = [
                (s, b["items"]) for s, b, _ in pages(client, world.subject, mode="flat", sort="old")
            ]
        for place in range(3):
            response = clients[0].get(f"{API}/comments/{comments[place].pk}/likers", {"limit": 2})
            answers[(step, "likers", place)] = [item["user"] for item in response.json()["items"]]
        likes_flush()
        answers[(step, "flushed")] = [
            (s, b["items"]) for s, b, _ in pages(world.clients["anonymous"], world.subject, mode="flat", sort="old")
        ]

    act(SCRIPT, "likes")
    reads("likes")
    if lose_states and redislink.client() is not None:
        redislink.client().flushdb()
    act(AFTER_THE_LOSS, "after the loss")
    reads("after the loss")
    return by_place(answers, world)


def by_place(answers: dict, world) -> dict:
    """The answers with each comment's id and times written as its place in the world."""
    places = {c.pk: n for n, c in enumerate(world.comments)}

    def placed(value):
        if isinstance(value, dict):
            return {
                k: (f"#{places.get(v, v)}" if k in ("id", "reply_to_id", "root_id") else placed(v))
                for k, v in value.items()
                if k not in ("created_at", "subject_id")
            }
        if isinstance(value, list | tuple):
            return type(value)(placed(v) for v in value)
        return value

    return placed(answers)


def test_likes_in_redis_answer_as_likes_in_the_database(redis_url, settings, monkeypatch):
    settings.COMMENTS_PAGE_CACHE_TTL = 0  # the pages are the likes' own, not a cache's
    people = make_people()
    likers = [UserFactory() for _ in range(LIKERS)]

    made = partial_states_made(monkeypatch)
    monkeypatch.setattr(state_sync, "FIRST_MEET_LIKERS", 2)  # comment 0's state comes back partial
    partial = like_scenario(people, likers, lose_states=True)
    assert made, "no partial state was made: the test compared nothing"
    settings.LIKES_PARTIAL_STATES = False  # the same popular comment's state is loaded whole
    made.clear()
    whole = like_scenario(people, likers, lose_states=True)
    assert not made, "a partial state was made with partial states off"
    settings.LIKES_REDIS_URL = None
    redislink.reset()
    database = like_scenario(people, likers, lose_states=True)

    assert_same(whole, database, "like state in Redis (whole states)")
    assert_same(partial, database, "like state in Redis (partial states)")


def partial_states_made(monkeypatch, *, one_too_many: bool = False) -> list[int]:
    """Counts the partial states the rows make (``one_too_many``, the deliberate break: each
    counts one liker it never met)."""
    made: list[int] = []
    original = state_sync.Rows.creation

    def creation(self, since=None, *, partial=False):
        created = original(self, since, partial=partial)
        if created is not None and created.unmet is not None:
            made.append(1)
            if one_too_many:
                created = dataclasses.replace(created, unmet=created.unmet + 1)
        return created

    monkeypatch.setattr(state_sync.Rows, "creation", creation)
    return made


def test_the_comparison_catches_a_partial_state_that_miscounts(redis_url, settings, monkeypatch):
    settings.COMMENTS_PAGE_CACHE_TTL = 0
    people = make_people()
    likers = [UserFactory() for _ in range(LIKERS)]
    partial_states_made(monkeypatch, one_too_many=True)
    monkeypatch.setattr(state_sync, "FIRST_MEET_LIKERS", 2)
    partial = like_scenario(people, likers, lose_states=True)
    settings.LIKES_REDIS_URL = None
    redislink.reset()
    database = like_scenario(people, likers, lose_states=True)
    with pytest.raises(AssertionError, match="partial states"):
        assert_same(partial, database, "like state in Redis (partial states)")
