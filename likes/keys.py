"""Every Redis key of the likes app, built in one place.

Keys of one subject carry the hash tag ``{s<subject_id>}``, so the multi-key scripts (a
comment's likers and its subject's event stream) stay in one slot of a Redis Cluster.
"""

from __future__ import annotations

from infra.streams import GROUP

PREFIX = "lk"
# Subjects with recent events, scored by the time of their last event: the flush's work list.
DIRTY_SUBJECTS = f"{PREFIX}:dirty"
# The consumer group of every event stream.
FLUSH_GROUP = GROUP


def _tag(subject_id: int) -> str:
    return f"{PREFIX}:{{s{subject_id}}}"


def likers(subject_id: int, comment_id: int) -> str:
    """Sorted set: user id -> like time (ms), plus a sentinel member marking the state loaded."""
    return f"{_tag(subject_id)}:c{comment_id}"


def likers_build(subject_id: int, comment_id: int, token: str) -> str:
    """Where a rebuild assembles the likers before renaming them into place."""
    return f"{_tag(subject_id)}:c{comment_id}:build:{token}"


def rebuild_lock(subject_id: int, comment_id: int) -> str:
    return f"{_tag(subject_id)}:c{comment_id}:lock"


def events(subject_id: int) -> str:
    """Stream of like/unlike actions of one subject, drained by the flush."""
    return f"{_tag(subject_id)}:ev"


def pending(subject_id: int) -> str:
    """Hash: comment id -> how many of its actions wait in the subject's stream (no field: none).
    Kept by the like script and the flush's acknowledgement, so a cold comment is told to have
    no action waiting without looking through the stream."""
    return f"{_tag(subject_id)}:pending"


def written(subject_id: int) -> str:
    """Sorted set: comment id -> when (Redis clock, ms) the flush last wrote its actions to the
    rows, for the last ``protocol.WRITTEN_WINDOW_MS``: rows read before that moment may miss
    them."""
    return f"{_tag(subject_id)}:written"


def subject_open(subject_id: int) -> str:
    """String: "1" while a like lately read the subject open (``protocol.SUBJECT_OPEN_SECONDS``),
    "0" for as long after it was closed; absent: the like script asks for the database's check.
    Only "1" lets a like through without that check, so a mark lost or run out costs a query,
    never a like in a closed subject."""
    return f"{_tag(subject_id)}:open"
