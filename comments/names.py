"""People's names as the service keeps and shows them: one line of visible text.

A display name arrives from outside (a host's SSO payload, an OpenID provider, a guest's form, an
email sign-in, an imported file) and ends in places that split on line breaks or honour
direction marks: an email's headers (a name with CR/LF made every message about its author fail,
or could have written headers of its own) and every page that shows it (a right-to-left override
turns "Ada" into a name that reads otherwise). So every path in writes names through
``clean_display_name``, and a message's headers go through ``one_line`` as well, for names stored
before (and the titles subjects arrive with).
"""

from __future__ import annotations

import unicodedata

DISPLAY_NAME_LENGTH = 100  # User.display_name's max_length

# Format characters (category Cf) kept: Persian and the Indic scripts spell words with the
# zero-width non-joiner and joiner, and emoji sequences (a family, a profession) are joined by
# the latter. Every other Cf goes, among them the bidi embeddings, overrides and isolates
# (U+202A-U+202E, U+2066-U+2069) that make a name read as another.
_KEPT_FORMAT = frozenset("\u200c\u200d")
# Control (Cc), format (Cf) and lone surrogates (Cs, which no email or UTF-8 page can carry).
# Unassigned (Cn) and private-use (Co) code points are kept: they break nothing, and a newer
# Unicode than this Python's assigns emoji among the former.
_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})


def one_line(value: str) -> str:
    """``value`` as one line of visible text: line breaks, tabs and any other whitespace become
    one space between words (so "Ada\\r\\nBcc: x" stays two words, not one), control and format
    characters go, and the ends are trimmed."""
    if value.isascii() and value.isprintable():  # nearly every name: nothing to drop
        return " ".join(value.split())
    kept = []
    for char in value:
        if char.isspace():
            kept.append(" ")
        elif unicodedata.category(char) not in _DROPPED_CATEGORIES or char in _KEPT_FORMAT:
            kept.append(char)
    return " ".join("".join(kept).split())


def clean_display_name(value: str) -> str:
    """A display name as stored: ``one_line`` and at most ``DISPLAY_NAME_LENGTH`` characters.
    May be empty (a name of only controls): each caller falls back as it did for a blank one."""
    return one_line(value)[:DISPLAY_NAME_LENGTH].rstrip()
