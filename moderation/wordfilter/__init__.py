"""The matching engine of the moderation word filter: pure Python (standard library and
``pyahocorasick``), no Django, no database, no cache. ``words.py`` builds one ``WordFilter``
per site and one for the global list and swaps them when the list changes.

Normalization
-------------
Text and entry words go through the same steps, each a C-speed operation on the whole string:

A. *Ignorable characters removed*: format characters (category Cf: zero-width space, joiners,
   word joiner, BOM, soft hyphen, bidi controls, tags...) and the other default-ignorable code
   points that render as nothing (combining grapheme joiner, variation selectors, Hangul
   fillers, Mongolian variation selectors): ``b\\u200bad`` reads ``bad``.
B. *NFKC, then* ``str.casefold()``: full-width forms become ASCII (``ＢＡＤ`` -> ``bad``),
   ligatures and compatibility characters expand (``ﬁ`` -> ``fi``, ``①`` -> ``1``), case folds
   (``ß`` -> ``ss``, ``Σ``/``ς`` -> ``σ``). The result is exactly ``unicodedata``'s NFKC, computed
   without CPython's composition pass where nothing composes (that pass is slow on CJK text).
C. *Underscores become spaces*; for a list with multi-word entries (and for entry words) every
   run of whitespace also becomes one space, so ``bad \\n\\n word`` matches ``bad word``.
D. *Separators between single letters dropped*: a run of 1 to 3 separator characters
   (whitespace, punctuation, symbols, emoji) is removed

   * between two Han, Hiragana or Katakana characters (these scripts put no spaces between
     words): ``敏 感 词``, ``敏.感.词``, ``这是敏*感*词啊`` read ``敏感词``, ``这是敏感词啊``;
   * between two single-letter tokens (a letter or digit with no letter, digit or mark right
     before or after it): ``b.a.d``, ``b a d``, ``b-a-d``, ``b_a_d``, ``b . a . d`` read
     ``bad``; a one-syllable Hangul word is such a token too (``나 쁜`` reads ``나쁜``).

   Real words are never joined: in ``grab a dog`` only ``a`` is a single letter.

An entry's word is normalized the same way (with the whitespace runs of step C), then stripped of
surrounding whitespace; a word without any letter or digit left (``...``) is unusable and skipped.

Matching and word boundaries
----------------------------
An entry with ``inside_words=False`` matches only at word boundaries of the normalized text: an
edge of the match is *not* a boundary when the match's edge character and its neighbour outside
the match are both word characters, that is letters, digits or combining marks of a script that
separates words with spaces. Han, Hiragana, Katakana, Hangul, Bopomofo, Thai, Lao, Khmer and
Myanmar never count as word characters, so ``敏感词`` matches inside ``这是敏感词啊`` while
``ass`` matches neither ``class``, ``assist`` nor ``grass``. Digits count (``bad1`` does not
match ``bad``). This is the regular-expression ``\\b`` rule with CJK-like scripts as non-word
characters; an entry whose edge is itself a separator (``.net``, ``c++``) needs no boundary on
that side. ``inside_words=True`` entries match anywhere.

One exception: where step D joined single letters across a space or a line break, the position
is a possible word boundary ("soft"), since spaced-out letters may be several words: ``a b.a.d``
and ``I said b a d`` match ``bad`` (the article is joined to the letters), and ``c l a s s``
matches ``ass`` too. Dots or dashes alone make no soft boundary: ``c.l.a.s.s`` does not.

Entries made only of word characters that need boundaries (the bulk of a list) are matched by
looking the words of the text up in a hash set; the others (CJK words, multi-word entries, words
with symbols, ``inside_words`` entries) go through one Aho-Corasick automaton, as do the words
around soft boundaries. Entries normalizing to the same key share it.

Spans and masking
-----------------
Hits carry their span in the *original* text, from the first to the last original character that
produced the match (separators and ignorable characters in between included). The span needs a
normalized->original index map, built only when there is a hit: each step records where it
changed the length of the text, and positions are mapped back through the steps. NFKC and case
folding are mapped per "chunk": a character with the marks or jamo that compose with it, or a
character that folds to several (``ß`` -> ``ss``, ``…`` -> ``...``); all the normalized
characters of a chunk map to the whole chunk (``e`` + U+0301 -> ``é``: both original
characters).

``mask`` replaces, inside the union of the given spans, every original character that is (or
normalizes to) a letter or digit by one ``*`` and drops the combining marks attached to a masked
character (a letter with its accents becomes one ``*``); separators, symbols, emoji, spaces and
ignorable characters inside a span are kept, and everything outside the spans is returned exactly
as written: ``b.a.d`` -> ``*.*.*``, ``ＢＡＤ`` -> ``***``, ``Straße`` (entry ``strasse``) ->
``******``. The text keeps its length in characters unless a masked span holds combining marks.

Performance: with no hit (the common case) a scan is a few whole-string passes (ignorable and
compatibility characters, NFKC quick check, case folding, the CJK joining, the word split), a
set intersection and one automaton pass; the index map is built only when something matched.
The character tables are built once per process, on first use.

The package
-----------
``chars``: the character tables and the normalization's regular expressions, built once per
process; ``normalize``: steps A-D; ``indexmap``: where the steps changed the length of the text,
to map hits back to it; ``matching``: the ``WordFilter`` (the hash set of words, the
Aho-Corasick automaton, the boundary rule); ``masking``: the letters of a span as ``*``.
"""

from __future__ import annotations

# Read from here by ``bench.wordfilter``: the version of the Unicode tables the engine normalizes
# with, and the tables themselves (built once per process; the benchmark builds them before its
# first timing).
import unicodedata as unicodedata

from .chars import _tables as _tables
from .matching import ACTIONS, EMPTY, Entry, Hit, WordFilter
from .normalize import normalize_text, normalize_word

__all__ = ["ACTIONS", "EMPTY", "Entry", "Hit", "WordFilter", "normalize_text", "normalize_word"]
