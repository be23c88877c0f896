"""Masking: the letters and digits of a hit's span as ``*``, one per letter, its separators
and everything outside the spans as written (``WordFilter.mask``).
"""

from __future__ import annotations

import unicodedata

from .normalize import _fold


def _maskable(ch: str) -> bool:
    """A letter or digit, or a character that normalizes to some (ﬁ, ①)."""
    if ch.isalnum():
        return True
    return not ch.isascii() and any(c.isalnum() for c in _fold(ch))


def _mask_span(segment: str) -> str:
    out = []
    after_masked = False
    for ch in segment:
        if _maskable(ch):
            out.append("*")
            after_masked = True
        elif after_masked and unicodedata.category(ch)[0] == "M":
            continue  # a mark of the masked letter: the letter and its accents are one "*"
        else:
            out.append(ch)
            after_masked = False
    return "".join(out)
