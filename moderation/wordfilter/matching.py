"""The compiled form of a word list, ``WordFilter``: the entries' keys in a hash set (whole
words of spaced scripts) and in an Aho-Corasick automaton (the others), the word boundary rule,
and the hits' spans in the original text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain

import ahocorasick

from .chars import _Patterns, _tables
from .indexmap import _back, _mapped
from .masking import _mask_span
from .normalize import _normalize, _Normalized, _soft, _words, normalize_word

ACTIONS = ("block", "review", "mask")  # severity order for callers: block > review > mask


@dataclass(frozen=True, slots=True)
class Entry:
    id: int
    word: str
    action: str  # one of ACTIONS
    inside_words: bool = False  # also match inside longer words (e.g. "ass" in "class")


@dataclass(frozen=True, slots=True)
class Hit:
    entry_id: int
    word: str  # the entry's word, as written in the list
    action: str
    start: int  # span in the original text, start inclusive,
    end: int  # end exclusive: first to last original character of the match


_Match = tuple[int, int, Entry]


def _bytes_key(s: str) -> str:
    """The UTF-8 bytes of s as a str of code points < 256: the automatons work on those.
    (pyahocorasick finds a node's child by a linear search: a root with thousands of CJK
    children makes every step cost a microsecond; over UTF-8 bytes a node has < 256.)"""
    return s if s.isascii() else s.encode("utf-8", "surrogatepass").decode("latin-1")


def _char_offsets(s: str, byte_offsets: Iterable[int]) -> dict[int, int]:
    """Offsets in ``_bytes_key(s)`` (at character boundaries) -> offsets in s."""
    if s.isascii():
        return {b: b for b in byte_offsets}
    data = s.encode("utf-8", "surrogatepass")
    out = {}
    prev = chars = 0
    for b in sorted(set(byte_offsets)):
        chars += len(data[prev:b].decode("utf-8", "surrogatepass"))
        out[b] = chars
        prev = b
    return out


def _automaton(items: Iterable[tuple[str, object]]) -> ahocorasick.Automaton | None:
    automaton = ahocorasick.Automaton()
    for key, value in items:
        automaton.add_word(_bytes_key(key), value)
    if not len(automaton):
        return None
    automaton.make_automaton()
    return automaton


class WordFilter:
    """The compiled form of a word list. Immutable once built (but for a cache built on first
    use); safe to share between threads."""

    __slots__ = ("_count", "_words", "_word_keys", "_ascii_word_keys", "_word_automaton", "_automaton", "_collapse")

    def __init__(self, entries: Iterable[Entry]):
        words: dict[str, list[Entry]] = {}  # keys of word characters only: entries with boundaries
        others: dict[str, tuple[list[Entry], list[Entry]]] = {}  # key -> (with boundaries, inside words)
        count = 0
        for entry in entries:
            if entry.action not in ACTIONS:
                raise ValueError(f"Entry {entry.id}: unknown action {entry.action!r}.")
            key = normalize_word(entry.word)
            if not key:
                continue
            count += 1
            if not entry.inside_words and _tables().patterns(key).word.fullmatch(key):
                words.setdefault(key, []).append(entry)
            else:
                others.setdefault(key, ([], []))[entry.inside_words].append(entry)
        self._count = count
        self._words = {key: tuple(found) for key, found in words.items()}
        self._word_keys = frozenset(words)
        self._ascii_word_keys = frozenset(key.encode("ascii") for key in words if key.isascii())
        self._word_automaton = None  # built on first use: only words around soft boundaries need it
        self._automaton = _automaton(
            (key, (len(_bytes_key(key)), tuple(bounded), tuple(inside))) for key, (bounded, inside) in others.items()
        )
        self._collapse = any(" " in key for key in others)

    def __len__(self) -> int:
        return self._count

    def __repr__(self) -> str:
        return f"<WordFilter: {self._count} entries>"

    def scan(self, text: str) -> list[Hit]:
        """Every hit in the text, in text order (by start, then end), overlapping hits included."""
        if not self._count or not text:
            return []
        p = _tables().patterns(text)
        norm = _normalize(text, p, self._collapse)
        found = self._matches(norm, p)
        if not found:
            return []
        mapped, steps = _mapped(text, norm, p, self._collapse)
        if mapped is not norm:  # a composition across chunks the index map cannot follow
            found = self._matches(mapped, p)  # (rare): match what the map describes exactly
        hits = []
        for start, end, entry in found:
            a, b = _back(steps, start, end)
            hits.append(Hit(entry_id=entry.id, word=entry.word, action=entry.action, start=a, end=b))
        hits.sort(key=lambda h: (h.start, h.end, h.entry_id))
        return hits

    def _matches(self, norm: _Normalized, p: _Patterns) -> list[_Match]:
        """The matches in the normalized text."""
        text = norm.text
        found: list[_Match] = []
        soft_cache: list[frozenset[int]] = []

        def soft() -> frozenset[int]:
            if not soft_cache:
                soft_cache.append(_soft(norm.mid, text, p))
            return soft_cache[0]

        if self._words:
            words = _words(text, p) if norm.words is None else norm.words
            keys: Iterable[str]
            if words and isinstance(words[0], bytes):
                keys = [key.decode("ascii") for key in self._ascii_word_keys.intersection(words)]
            else:
                keys = self._word_keys.intersection(words)
            for key in keys:
                self._whole_words(text, key, p, found)
            if len(norm.mid) != len(text) and soft():
                self._soft_words(text, soft(), p, found)
        if self._automaton is not None:
            self._automaton_matches(text, soft, p, found)
        return found

    def _whole_words(self, text: str, key: str, p: _Patterns, found: list[_Match]) -> None:
        """Every occurrence of a key made of word characters that is a whole word of the text."""
        entries = self._words[key]
        size = len(key)
        i = text.find(key)
        while i >= 0:
            end = i + size
            if (i == 0 or not p.wordch.match(text, i - 1)) and not p.wordch.match(text, end):
                found.extend((i, end, entry) for entry in entries)
            i = text.find(key, i + 1)

    def _soft_words(self, text: str, soft: frozenset[int], p: _Patterns, found: list[_Match]) -> None:
        """The word keys matching a part of a word that starts or ends at a soft boundary."""
        for m in p.word.finditer(text):
            a, b = m.span()
            if not any(a < q < b for q in soft):
                continue
            word = m.group()
            if self._word_automaton is None:
                self._word_automaton = _automaton(
                    (key, (len(_bytes_key(key)), found)) for key, found in self._words.items()
                )
            assert self._word_automaton is not None  # made of self._words, which has words
            raw = list(self._word_automaton.iter(_bytes_key(word)))
            offsets = _char_offsets(word, chain.from_iterable((last + 1 - size, last + 1) for last, (size, _) in raw))
            for last, (size, entries) in raw:
                start, end = a + offsets[last + 1 - size], a + offsets[last + 1]
                if (start == a or start in soft) and (end == b or end in soft) and (start, end) != (a, b):
                    found.extend((start, end, entry) for entry in entries)

    def _automaton_matches(
        self, text: str, soft: Callable[[], frozenset[int]], p: _Patterns, found: list[_Match]
    ) -> None:
        assert self._automaton is not None  # the caller checked
        raw = list(self._automaton.iter(_bytes_key(text)))
        if not raw:
            return
        offsets = _char_offsets(text, chain.from_iterable((last + 1 - size, last + 1) for last, (size, _, _) in raw))
        wordch = p.wordch
        size = len(text)
        for last, (length, bounded, inside) in raw:
            start, end = offsets[last + 1 - length], offsets[last + 1]
            found.extend((start, end, entry) for entry in inside)
            if bounded and (
                (start == 0 or not (wordch.match(text, start) and wordch.match(text, start - 1)) or start in soft())
                and (end == size or not (wordch.match(text, end - 1) and wordch.match(text, end)) or end in soft())
            ):
                found.extend((start, end, entry) for entry in bounded)

    def mask(self, text: str, hits: Iterable[Hit] | None = None) -> str:
        """The text with the letters of the given hits (default: the ``mask`` hits of
        ``scan(text)``) replaced by ``*``, one per letter; separators inside a span and
        everything outside the spans kept as written. The hits may come from any filter (only
        their spans are used) but must come from a scan of this same text."""
        if hits is None:
            hits = [h for h in self.scan(text) if h.action == "mask"]
        spans: list[list[int]] = []  # the union of the spans, overlapping or touching ones merged
        for start, end in sorted((max(h.start, 0), min(h.end, len(text))) for h in hits):
            if start >= end:
                continue
            if spans and start <= spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([start, end])
        if not spans:
            return text
        out: list[str] = []
        pos = 0
        for start, end in spans:
            out.append(text[pos:start])
            out.append(_mask_span(text[start:end]))
            pos = end
        out.append(text[pos:])
        return "".join(out)


EMPTY = WordFilter([])
