"""What a comment may say, and who may write where: the body's checks, mentions, the
status a new comment starts in."""

from __future__ import annotations

import unicodedata

from django.conf import settings

from ..exceptions import InvalidInput, SubjectClosed
from ..models import (
    Comment,
    ModerationPolicy,
    Site,
    Status,
    SubjectState,
    User,
)
from ..queries import (
    is_site_moderator,
)
from ..rendering import parse_mentions

# --- content -------------------------------------------------------------------------------


# Characters that show nothing besides whitespace, controls (Cc) and format characters (Cf: the
# zero-width space, non-joiner and joiner, the word joiner, the byte order mark, bidi marks, the
# soft hyphen, tags...): the letters and marks fonts draw as blanks (the combining grapheme
# joiner, the Hangul fillers, the Braille blank) and the variation selectors.
_BLANK_LOOKING = frozenset("\u034f\u115f\u1160\u2800\u3164\uffa0")
_VARIATION_SELECTORS = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))


def _shows_nothing(char: str) -> bool:
    if char.isspace() or char in _BLANK_LOOKING or unicodedata.category(char) in ("Cc", "Cf"):
        return True
    code = ord(char)
    return any(low <= code <= high for low, high in _VARIATION_SELECTORS)


def has_visible_text(text: str) -> bool:
    """Whether ``text`` shows anything at all: not only whitespace and invisible characters
    (a body of zero-width spaces and joiners is an empty comment that looks posted)."""
    return not all(_shows_nothing(char) for char in text)


def check_body(body: object) -> str:
    """The body as stored: a string of 1..COMMENTS_MAX_BODY characters with something visible
    in it (not only whitespace, nor only zero-width and other invisible characters)."""
    if not isinstance(body, str):
        raise InvalidInput("body must be a string.", fields={"body": ["Must be a string."]})
    if "\x00" in body:
        raise InvalidInput("body contains a NUL character.", fields={"body": ["NUL characters are not allowed."]})
    body = body.strip()
    if not body:
        raise InvalidInput("body is empty.", fields={"body": ["This field may not be blank."]})
    if not has_visible_text(body):
        raise InvalidInput(
            "body has no visible characters.", fields={"body": ["The comment has no visible characters."]}
        )
    limit = settings.COMMENTS_MAX_BODY
    if len(body) > limit:
        raise InvalidInput(
            f"body is longer than {limit} characters.",
            fields={"body": [f"Ensure this field has no more than {limit} characters."]},
        )
    return body


def check_subject_open(*, subject_state: str, site_id: int, user: User, is_moderator: bool | None = None) -> None:
    """Refuse ``user``'s write in a closed subject (``SubjectClosed``) unless they moderate its
    site: a closed discussion is read-only for everyone else. Every write a reader makes in a
    subject asks this (a comment or reply, a like or unlike, an edit, a report); an author may
    still delete their own comment, which takes words back rather than adding to the
    discussion. ``is_moderator``: the user's role when the caller knows it; else it is read,
    and only for a closed subject."""
    if subject_state != SubjectState.CLOSED:
        return
    if is_moderator is None:
        is_moderator = is_site_moderator(user=user, site=site_id)
    if not is_moderator:
        raise SubjectClosed()


def resolve_mentions(body: str, subject_id: int) -> list[dict]:
    """The users a body mentions, in one query: ``@name`` is a username (any case), or else the
    display name (any case) of exactly one user who has commented in the subject, since that is
    the name the widget shows (single sign-on usernames are opaque). A name matching several
    participants' display names mentions nobody. Guests are never mentioned: they have no
    address anyone verified to be told at, and a guest who takes a member's name must not take
    the member's mentions (or make them ambiguous)."""
    names = parse_mentions(body, settings.COMMENTS_MAX_MENTIONS)
    if not names:
        return []
    from django.db.models import Exists, OuterRef, Q
    from django.db.models.functions import Lower

    lowered = [n.lower() for n in names]
    participant = Exists(Comment.objects.filter(author_id=OuterRef("pk"), subject_id=subject_id))
    users = (
        User.objects.annotate(lname=Lower("username"), ldisplay=Lower("display_name"), participant=participant)
        .filter(Q(lname__in=lowered) | (Q(ldisplay__in=lowered) & Q(participant=True)), is_active=True, is_guest=False)
        .values_list("id", "lname", "ldisplay", "participant")
    )
    by_username: dict[str, int] = {}
    by_display_name: dict[str, set[int]] = {}
    for account_id, username, display_name, is_participant in users:
        by_username[username] = account_id
        if is_participant:
            by_display_name.setdefault(display_name, set()).add(account_id)
    found: list[dict] = []
    for name in names:
        user_id = by_username.get(name.lower())
        if user_id is None and len(by_display_name.get(name.lower(), ())) == 1:
            (user_id,) = by_display_name[name.lower()]
        if user_id is not None and all(m["id"] != user_id for m in found):
            found.append({"id": user_id, "name": name})
    return found


def initial_status(site: Site, author: User, is_moderator: bool) -> str:
    if site.moderation == ModerationPolicy.PRE and not is_moderator:
        return Status.PENDING
    return Status.PUBLISHED
