"""Streaming XML for the readers: lxml's ``iterparse`` over the file, one element of interest at
a time, each released once read, so memory stays bounded whatever the file size.

The parser resolves no entity, loads no DTD and touches no network (no entity expansion, no
external entities), and keeps libxml2's limits on huge text nodes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from lxml import etree

from .records import FormatError, open_binary

_HEAD = 64 * 1024
_ROOT = re.compile(rb"<\s*(?:[A-Za-z_][\w.\-]*:)?([A-Za-z_][\w.\-]*)")
_SKIPPED = re.compile(rb"<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>\[]*(?:\[.*?\])?\s*>", re.S)


class _Prefixed:
    """A byte stream that first serves ``head`` (already read to look at it), then the rest."""

    def __init__(self, head: bytes, rest):
        self._head, self._rest = head, rest

    def read(self, size: int = -1) -> bytes:
        if self._head:
            if size is None or size < 0:
                out, self._head = self._head + self._rest.read(), b""
                return out
            out, self._head = self._head[:size], self._head[size:]
            return out
        return self._rest.read(size)


def root_name(head: bytes) -> str | None:
    """The local name of the document's first element, from the file's first bytes."""
    match = _ROOT.search(_SKIPPED.sub(b"", head))
    return match.group(1).decode("ascii", "replace") if match else None


def elements(path: str, *, root: str, tags: Iterable[str], label: str) -> Iterator[etree._Element]:
    """The elements named ``tags`` (with ``{*}`` for any namespace), as each ends. The caller
    releases each (``release``) once read. ``FormatError`` when the file is not a ``label``
    (its root element is not ``root``) or not well-formed XML."""
    stream = open_binary(path)
    try:
        head = stream.read(_HEAD)
        found = root_name(head)
        if found is None:
            raise FormatError(f"this is not a {label}: no XML element found at its start")
        if found != root:
            raise FormatError(f"this is not a {label}: its root element is <{found}>, not <{root}>")
        context = etree.iterparse(
            _Prefixed(head, stream),
            events=("end",),
            tag=list(tags),
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
        )
        try:
            for _, elem in context:
                yield elem
        except etree.XMLSyntaxError as exc:
            raise FormatError(f"the file is not well-formed XML: {exc.msg} (line {exc.lineno})") from None
    except (OSError, EOFError) as exc:  # a truncated or corrupt .gz
        raise FormatError(f"cannot read the file: {exc}") from None
    finally:
        stream.close()


def release(elem: etree._Element) -> None:
    """Free an element that has been read, and the siblings read before it."""
    elem.clear(keep_tail=False)  # type: ignore[call-arg]  # lxml >= 4.4 has it; lxml-stubs lag
    parent = elem.getparent()
    if parent is not None:
        while elem.getprevious() is not None:
            del parent[0]


def namespace(tag: str) -> str:
    """``"{uri}"`` of a qualified tag, ``""`` for none."""
    return tag[: tag.index("}") + 1] if tag.startswith("{") else ""


def flag(value: str | None) -> bool | None:
    """An XML boolean; a missing element is False; anything unreadable None."""
    value = (value or "").strip().lower()
    if value in ("", "false", "0"):
        return False
    if value in ("true", "1"):
        return True
    return None
