"""Hand-offs sent together (``infra.streams.together``, opened around every hook by
``comments.hooks.send_together``): what a write hands on to other processes (a second check, a
notifications event, a webhooks event, a new comment's empty like state) travels to the state
Redis in one round trip instead of one per receiver (docs/fast-paths.md).

``STREAMS_HANDOFFS_TOGETHER`` off sends each hand-off in a round trip of its own.

Guarantee: the same commands reach Redis in the same order, only in fewer round trips; a
hand-off whose commands fail still runs its ``otherwise`` (its task).

The scenario runs on two twin worlds (the same people, the same comments made in the same
order), the path on in one and off in the other; the commands sent are compared with the twins'
ids matched (every comment by its place in its subject), and left out: an event's random id and
the moment it was made (a webhooks event's ``at``)."""

from __future__ import annotations

import re

import pytest

from comments.models import Comment
from infra import streams

from .scenario import make_people, make_world, writes

pytestmark = pytest.mark.django_db(transaction=True)

# What differs between twins by nature: an event's random id, and the moment it was made.
_EVENT_ID = re.compile(r"[0-9a-f]{32}")
_EVENT_TIME = re.compile(r'"at":[0-9.]+')


@pytest.fixture
def stream_road(redis_url, settings):
    """The state Redis (the stream road); the page cache off, which plays no part here."""
    settings.COMMENTS_PAGE_CACHE_TTL = 0


def sent_round_trips(monkeypatch) -> list[list[tuple]]:
    """Records the commands of each round trip the hand-offs make."""
    trips: list[list[tuple]] = []
    original = streams.round_trip

    def round_trip(r, commands):
        trips.append(list(commands))
        return original(r, commands)

    monkeypatch.setattr(streams, "round_trip", round_trip)
    return trips


def run(people, trips: list[list[tuple]]):
    """The scenario's writes on a new world; what they sent, as one list of commands per write,
    with the world's ids written as places (``#n``) and the events' ids left out; and how many
    round trips each write took."""
    world = make_world(people=people)
    sent, counts = [], []
    for name, write in writes(world):
        del trips[:]
        write()
        sent.append((name, [command for trip in trips for command in trip]))
        counts.append(len(trips))
    ids = [
        world.subject.pk,
        *Comment.objects.filter(subject_id=world.subject.pk).order_by("id").values_list("id", flat=True),
    ]
    places = {str(value): f"#{n}" for n, value in enumerate(ids)}
    pattern = re.compile(r"(?<!\d)(" + "|".join(sorted(places, key=len, reverse=True)) + r")(?!\d)")

    def placed(value):
        if isinstance(value, str | int) and not isinstance(value, bool):
            text = _EVENT_TIME.sub('"at":<time>', _EVENT_ID.sub("<event id>", str(value)))
            return pattern.sub(lambda m: places[m.group(1)], text)
        return value

    return [
        (name, [tuple(placed(part) for part in command) for command in commands]) for name, commands in sent
    ], counts


def test_hand_offs_sent_together_are_the_hand_offs_sent_one_by_one(stream_road, settings, monkeypatch):
    people = make_people()
    trips = sent_round_trips(monkeypatch)
    together, together_trips = run(people, trips)
    settings.STREAMS_HANDOFFS_TOGETHER = False
    one_by_one, one_by_one_trips = run(people, trips)
    assert together == one_by_one
    assert any(commands for _, commands in together), "no write handed anything on: the test compared nothing"
    # What it saves: the post hands on several things, in one round trip.
    assert together_trips[0] == 1 < one_by_one_trips[0]
    assert sum(together_trips) < sum(one_by_one_trips)


def test_the_comparison_catches_a_gathering_that_loses_a_hand_off(stream_road, settings, monkeypatch):
    # The deliberate break: of the hand-offs gathered, only the first is sent.
    original = streams._send
    monkeypatch.setattr(streams, "_send", lambda handoffs: original(handoffs[:1]) + [True] * (len(handoffs) - 1))
    people = make_people()
    trips = sent_round_trips(monkeypatch)
    together, _ = run(people, trips)
    settings.STREAMS_HANDOFFS_TOGETHER = False
    one_by_one, _ = run(people, trips)
    assert together != one_by_one
