"""The like protocol's vocabulary, defined once: how a comment's like state in Redis encodes its
flags, what the like script answers, and the windows the scripts and the flush agree on. The Lua
scripts (``likes/lua/``) get every one of these by name in their prelude (``LUA_CONSTANTS``), so
Python and Lua cannot drift apart; docs/likes-protocol.md draws the states and transitions.

A comment's state is a sorted set (``keys.likers``). A member scored >= 0 is a liker (the score
is the like's time in ms); negative scores are flags:

- ``SENTINEL``, scored ``OPEN`` or ``CHECK``: present in every loaded state, so "loaded, nobody
  likes it" differs from "not loaded". ``OPEN``: anyone who can read the subject may like the
  comment (published and public); ``CHECK``: the database must be asked (pending, shadow,
  friends-only, deleted). States written before the flag existed carry -inf: CHECK too.
- ``PARTIAL``, scored ``PARTIAL_BASE - n``: a partial state, which has not met ``n`` of the
  comment's likers (a popular comment's first like makes one instead of loading every liker).
  Besides likers it holds users met who do not like the comment, scored ``UNLIKED``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

# --- members and scores of a comment's state ---------------------------------------------------

SENTINEL = "0"  # never a user id; scored below every like time, so it sorts before every liker
OPEN = -1
CHECK = -2
PARTIAL = "p"  # never a user id either
UNLIKED = -3
PARTIAL_BASE = -10  # below the flags and UNLIKED: the marker is never taken for a liker or a flag

# --- a subject's open mark (``keys.subject_open``) ---------------------------------------------

MARKED_OPEN = "1"  # a like read the subject open lately: likes of OPEN comments need no check
MARKED_CLOSED = "0"  # closed lately: no like that read it open before may mark it open again

# --- windows -----------------------------------------------------------------------------------

# How long the flush remembers that it wrote a comment's actions to the rows (``keys.written``):
# a state is created from rows read before the create only if no write came in meanwhile, and a
# read is used for that only while it is younger than ``state_sync.READ_MAX_AGE``, far within.
WRITTEN_WINDOW_MS = 60_000

# How long a like that read the subject open lets the likes after it through without asking the
# database whether it is still open (``MARKED_OPEN``), and how long a closing stops such a like
# from saying so again (``MARKED_CLOSED``). A closing that could not reach Redis takes effect in
# the database at once and here within this time.
SUBJECT_OPEN_SECONDS = 60


# --- answers of the scripts --------------------------------------------------------------------


class LikeOutcome(enum.Enum):
    """What the like script (``live.like``) did with one action. The values are the codes the
    script answers in its first field (``ANSWER_<name>`` in Lua); DONE stands for any count
    >= 0, the comment's count after the action."""

    DONE = 0  # applied and appended to the stream
    COLD = -1  # the state is missing: rows read after ``since`` may create it
    NEEDS_CHECK = -2  # the database must say whether the user may like the comment
    LOAD_CAREFULLY = -3  # missing while actions wait in the stream: only ``state_sync.load`` may make it
    NEEDS_USER = -4  # a partial state has not met the user: the user's row read after ``since``

    @classmethod
    def of_code(cls, code: int) -> LikeOutcome:
        return cls.DONE if code >= 0 else cls(code)


@dataclass(frozen=True, slots=True)
class LikeResult:
    """``live.like``'s answer: the outcome, with the comment's count and the user's flag as they
    are now when DONE, and with ``since`` (Redis time, ms) when COLD or NEEDS_USER: rows read
    after it will do."""

    outcome: LikeOutcome
    count: int = 0
    liked: bool = False
    since: int | None = None

    @classmethod
    def of_reply(cls, code: int, value: int) -> LikeResult:
        """From the script's ``{code or count, liked or since, ...}``."""
        outcome = LikeOutcome.of_code(code)
        if outcome is LikeOutcome.DONE:
            return cls(outcome, count=code, liked=bool(value))
        if outcome in (LikeOutcome.COLD, LikeOutcome.NEEDS_USER):
            return cls(outcome, since=value)
        return cls(outcome)


CREATE_REFUSED = -1  # create_state: the rows may be behind, or a partial state is there
VIEWER_NOT_MET = 2  # page_state's "liked" where a partial state has not met the viewer


# --- the scripts' prelude ----------------------------------------------------------------------

# Every one is used by a script (CHECK is not: the scripts ask only whether a flag is OPEN).
LUA_CONSTANTS: dict[str, int | str] = {
    "SENTINEL": SENTINEL,
    "OPEN": OPEN,
    "PARTIAL": PARTIAL,
    "UNLIKED": UNLIKED,
    "PARTIAL_BASE": PARTIAL_BASE,
    "MARKED_OPEN": MARKED_OPEN,
    "WRITTEN_WINDOW_MS": WRITTEN_WINDOW_MS,
    "SUBJECT_OPEN_SECONDS": SUBJECT_OPEN_SECONDS,
    **{f"ANSWER_{o.name}": o.value for o in LikeOutcome if o is not LikeOutcome.DONE},
    "CREATE_REFUSED": CREATE_REFUSED,
    "VIEWER_NOT_MET": VIEWER_NOT_MET,
}


def lua_prelude() -> str:
    """``LUA_CONSTANTS`` as Lua locals, declared before every script of ``likes/lua/``."""

    def literal(value: int | str) -> str:
        return f"'{value}'" if isinstance(value, str) else str(value)

    return "".join(f"local {name} = {literal(value)}\n" for name, value in LUA_CONSTANTS.items())
