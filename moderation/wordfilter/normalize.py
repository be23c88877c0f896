"""The normalization of texts and entry words (steps A-D of the package's docstring), each
step a C-speed operation on the whole string where possible.
"""

from __future__ import annotations

import operator
import unicodedata
from dataclasses import dataclass

from .chars import _Patterns, _tables

_FIRST_GROUP = operator.itemgetter(1)


def _clean(s: str, p: _Patterns) -> tuple[str, str]:
    """Steps A and B but case folding: the text without ignorable characters, then its NFKC.

    CPython's NFKC is slow when the text is not NFKC already (its composition pass walks every
    character of CJK or Thai text in Python-visible time), which a Chinese comment with
    full-width punctuation never is. So the compatibility characters found are replaced by their
    NFKC form, which keeps the text's NFKD, hence its NFKC: if the result passes the quick check,
    it is the text's NFKC. Otherwise NFKD then NFC, which is NFKC by definition and quick when
    nothing composes."""
    found = set(p.special.findall(s))
    if not found:
        return s, (s if unicodedata.is_normalized("NFKC", s) else unicodedata.normalize("NFKC", s))
    removed = found & _tables().ignorable_chars
    if removed:
        if len(removed) <= 8:
            for ch in removed:
                s = s.replace(ch, "")
        else:
            s = p.ignorable.sub("", s)
    if unicodedata.is_normalized("NFKC", s):
        return s, s
    compat = found - removed
    if len(compat) <= 16:
        out = s
        for ch in compat:
            out = out.replace(ch, unicodedata.normalize("NFKC", ch))
        if unicodedata.is_normalized("NFKC", out):
            return s, out
    return s, unicodedata.normalize("NFC", unicodedata.normalize("NFKD", s))


def _cjk_joined(s: str, p: _Patterns) -> str:
    """Step D, first part. In a text with spaces (not mostly CJK), trying the positions of the
    Han/Kana characters is cheaper; in CJK text, those of the separators."""
    if s.count(" ") * 16 > len(s):
        return p.cjk_pairs.sub(_FIRST_GROUP, s)
    return p.cjk_join.sub("", s)


def _has_single_letters(s: str, p: _Patterns) -> bool:
    """Whether s (not ASCII, normalized) has letters of the scripts step D joins but the word
    split does not see (Hangul, Thai...): their UTF-16 high bytes first (a few C-speed passes),
    then the regex if those say maybe."""
    if not p.astral:
        high = s.encode("utf-16-le", "surrogatepass")[1::2]
        if b"\x01" not in high.translate(_tables().single_high_bytes):
            return False
    return p.single.search(s) is not None


def _fold(s: str, p: _Patterns | None = None) -> str:
    """Steps A and B: ignorable characters removed, NFKC, case folding."""
    if s.isascii():
        return s.lower()
    return _clean(s, p or _tables().patterns(s))[1].casefold()


_ASCII_SEPARATORS = str.maketrans({c: " " for c in range(128) if not chr(c).isalnum()})
# UTF-8 bytes to spaces but ASCII letters and digits; the bytes of UTF-8 sequences of no word
# character but ASCII ones: ASCII, continuation bytes, the leads of U+3000-U+9FFF (CJK; U+302A-
# U+302F are in _NOSPACE_RANGES), of U+B000-U+D7FF (Hangul), U+E000-U+EFFF (private use) and,
# with the patterns without astral ranges, of astral characters (those patterns are used only
# when the text's astral characters are no word characters: emoji).
_UTF8_SEPARATORS = bytes(c if c < 128 and chr(c).isalnum() else 32 for c in range(256))
_UTF8_WORDLESS = bytes([*range(0xC0), *range(0xE3, 0xEA), 0xEB, 0xEC, 0xED, 0xEE])
_UTF8_WORDLESS_OR_ASTRAL = _UTF8_WORDLESS + bytes(range(0xF0, 0xF5))


def _words(s: str, p: _Patterns) -> list[str] | list[bytes]:
    """The words of spaced scripts in s (maximal runs of word characters), in order: as str,
    or as the UTF-8 bytes of ASCII words when s has no word characters beyond ASCII (split at
    C speed, a third of the regex's time)."""
    if s.isascii():
        return s.translate(_ASCII_SEPARATORS).split()
    data = s.encode("utf-8", "surrogatepass")
    if not data.translate(None, _UTF8_WORDLESS if p.astral else _UTF8_WORDLESS_OR_ASTRAL):
        return data.translate(_UTF8_SEPARATORS).split()
    return p.word.findall(s)


@dataclass(slots=True)
class _Normalized:
    """A text through the normalization steps: after A (``a``), B (``b``), C (``c``), the first
    part of D (``mid``: CJK) and the second (``text``: single letters, the final result),
    whether that second part ran, the words of ``text`` if known (see ``_words``)."""

    a: str
    b: str
    c: str
    mid: str
    text: str
    singles: bool
    words: list[str] | list[bytes] | None = None


def _normalize(text: str, p: _Patterns, collapse: bool) -> _Normalized:
    if text.isascii():
        a, b, single = text, text.lower(), False
    else:
        a, b = _clean(text, p)
        b = b.casefold()
        single = _has_single_letters(b, p)
    c = b.replace("_", " ")
    if collapse:
        c = " ".join(c.split())
    mid = c if c.isascii() else _cjk_joined(c, p)
    words = _words(mid, p)
    # Joining single letters needs two one-letter words in a row (most texts have none), or
    # letters of the scripts the word split leaves out.
    if single:
        return _Normalized(a, b, c, mid, p.single_join.sub("", mid), True)
    try:
        singles = b"\x01\x01" in bytes(map(len, words))
    except ValueError:  # a word of 256 characters or more
        singles = b"\x01\x01" in bytes(min(len(word), 2) for word in words)
    if singles:
        return _Normalized(a, b, c, mid, p.single_join.sub("", mid), True)
    return _Normalized(a, b, c, mid, mid, False, words)


def _soft(mid: str, post: str, p: _Patterns) -> frozenset[int]:
    """The soft word boundaries of ``post`` (``mid`` after joining single letters): where a
    space or a line break between two letters of spaced scripts was removed."""
    if len(mid) == len(post) or (mid.count(" ") == post.count(" ") and mid.count("\n") == post.count("\n")):
        return frozenset()
    soft = []
    removed = 0
    for m in p.single_join.finditer(mid):
        a, b = m.span()
        sep = m.group()
        if (" " in sep or "\n" in sep) and p.wordch.match(mid, a - 1) and p.wordch.match(mid, b):
            soft.append(a - removed)
        removed += b - a
    return frozenset(soft)


def normalize_text(text: str) -> str:
    """The text as the filter reads it (steps A-D of the module docstring, whitespace runs
    included)."""
    return _normalize(text, _tables().patterns(text), True).text


def normalize_word(word: str) -> str:
    """An entry's word as it is matched: the text normalization, surrounding whitespace removed;
    "" (an unusable entry) when no letter or digit is left."""
    key = normalize_text(word).strip(" ")
    return key if any(ch.isalnum() for ch in key) else ""
