"""Which subject an imported thread goes to: its key and its URL, from what the source says of
the page (an identifier, an address) and the import's options (``ImportOptions``: URL remaps,
what the key is made from).

The key a page's widget asks for when the page gives no ``data-key`` is its path as the browser
reports it, ``location.pathname`` (``static/comments/embed.js``); ``page_key`` is that value
computed from a URL on the server, so that a thread keyed by its path lands on the subject its
page reads. Nothing here touches the database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from .formats.records import Thread, clean_text, http_url

KEY_LENGTH = 255

# What a browser percent-encodes in a path besides C0 controls and everything above U+007E: the
# URL standard's "path percent-encode set" (https://url.spec.whatwg.org/) and, as Chromium does,
# "|". An escape already there stays as it is (neither decoded nor upper-cased).
_PATH_ESCAPED = frozenset(' "#<>?^`{|}')
_C0_AND_SPACE = "".join(chr(c) for c in range(0x21))
_SINGLE_DOT = {".", "%2e"}
_DOUBLE_DOT = {"..", ".%2e", "%2e.", "%2e%2e"}
_SCHEME_AND_HOST = re.compile(r"^(?P<scheme>https?)://(?P<host>[^/?#]*)", re.IGNORECASE)


def page_key(address: str) -> str:
    """The widget's default key on the page at ``address`` (an http(s) URL, or a path starting
    with ``/``): what ``location.pathname`` gives there. The query and the fragment are not part
    of it, a trailing slash is kept as the address has it, ``.`` and ``..`` segments are
    resolved, characters a browser escapes are percent-encoded (UTF-8), and an empty path is
    ``/``. ``""`` for anything else (an identifier, another scheme)."""
    # A browser drops tabs and newlines anywhere in a URL, and surrounding spaces and controls,
    # and takes a backslash for a slash in http(s) URLs.
    address = re.sub(r"[\t\n\r]", "", clean_text(address)).strip(_C0_AND_SPACE).replace("\\", "/")
    found = _SCHEME_AND_HOST.match(address)
    if found:
        address = address[found.end() :]
        if not found.group("host"):
            return ""
    elif not address.startswith("/") or address.startswith("//"):
        return ""
    path = re.split(r"[?#]", address, maxsplit=1)[0]
    if not path:
        return "/"
    segments = path[1:].split("/")
    out: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        lowered = segment.lower()
        if lowered in _DOUBLE_DOT:
            if out:
                out.pop()
            if last:
                out.append("")
        elif lowered in _SINGLE_DOT:
            if last:
                out.append("")
        else:
            out.append(_escaped(segment))
    return "/" + "/".join(out)


def _escaped(segment: str) -> str:
    if segment.isascii() and not any(c in _PATH_ESCAPED or c < " " or c == "\x7f" for c in segment):
        return segment
    return "".join(
        c
        if c.isascii() and c not in _PATH_ESCAPED and " " < c < "\x7f"
        else "".join(f"%{b:02X}" for b in c.encode("utf-8"))
        for c in segment
    )


class KeyFrom(StrEnum):
    """What a thread's subject key is made from (``--key-from``)."""

    PATH = "path"  # the path of its (remapped) URL: the widget's default key
    URL = "url"  # its whole (remapped) URL
    ID = "id"  # its identifier in the source (Disqus's <id>, WordPress's post id, ...)


class OptionError(ValueError):
    """An import option that cannot be used; the message says why, for a person."""


@dataclass(frozen=True, slots=True)
class UrlRule:
    """``old`` -> ``new``. An ``old`` ending with ``/`` is a prefix: every URL under it moves,
    keeping what follows the prefix; otherwise it is one URL."""

    old: str
    new: str

    @property
    def prefix(self) -> bool:
        return self.old.endswith("/")

    def __str__(self) -> str:
        return f"{self.old}={self.new}"


def parse_url_rule(text: str) -> UrlRule:
    """``OLD=NEW`` (both http or https URLs; the split is at the ``=`` before NEW's scheme, so
    OLD may hold a query with ``=``) as a rule, or ``OptionError``. A bare origin
    (``https://old.example``) is the prefix of its whole site."""
    text = text.strip()
    found = re.match(r"^(?P<old>.+?)=(?P<new>https?://.*)$", text, re.IGNORECASE)
    if found is None:
        if "=" not in text:
            raise OptionError(f"--map-url takes OLD=NEW (two URLs joined by =): got {text!r}")
        old, new = text.split("=", 1)
        raise OptionError(f"--map-url {text!r}: the new address must be an http:// or https:// URL, not {new!r}")
    old, new = found.group("old").strip(), found.group("new").strip()
    for name, url in (("old", old), ("new", new)):
        found = _SCHEME_AND_HOST.match(url)
        if found is None or not found.group("host") or not http_url(url):
            raise OptionError(f"--map-url {text!r}: the {name} address must be an http:// or https:// URL with a host")
    old, new = _origin_as_prefix(old), _origin_as_prefix(new)
    if old.endswith("/") and not new.endswith("/"):
        raise OptionError(f"--map-url {text!r}: OLD ends with /, a prefix: it maps to a prefix, end NEW with / too")
    return UrlRule(old, new)


def _origin_as_prefix(url: str) -> str:
    found = _SCHEME_AND_HOST.match(url)
    return url + "/" if found and found.end() == len(url) else url


def _comparable(url: str) -> str:
    """``url`` with its scheme and host in lower case (they are case-insensitive)."""
    found = _SCHEME_AND_HOST.match(url)
    if not found:
        return url
    return found.group(0).lower() + url[found.end() :]


@dataclass(frozen=True, slots=True)
class ImportOptions:
    """How an import keys and addresses the subjects its threads become. The default (no rule,
    no ``key_from``): a thread keyed by its identifier when the format names one, else by its
    URL's path (``page_key``)."""

    url_rules: tuple[UrlRule, ...] = ()
    key_from: KeyFrom | None = None

    @classmethod
    def parse(cls, *, map_url: list[str] | tuple[str, ...] = (), key_from: str | None = None) -> ImportOptions:
        """Options from their text (the command's and the admin's), or ``OptionError``."""
        rules = tuple(parse_url_rule(text) for text in map_url if text.strip())
        olds = [_comparable(r.old) for r in rules]
        repeated = sorted({old for old in olds if olds.count(old) > 1})
        if repeated:
            raise OptionError(f"--map-url: {repeated[0]} is mapped twice")
        if key_from in (None, ""):
            return cls(rules, None)
        if key_from not in KeyFrom.__members__.values():
            raise OptionError(f"--key-from {key_from!r}: use one of {', '.join(KeyFrom)}")
        return cls(rules, KeyFrom(key_from))

    def as_dict(self) -> dict:
        """As the import run keeps them."""
        return {"map_url": [str(r) for r in self.url_rules], "key_from": self.key_from.value if self.key_from else ""}

    def describe(self) -> str:
        """The options as command-line flags, each after a space ("" for the default)."""
        flags = [f" --map-url {r}" for r in self.url_rules]
        return "".join(flags) + (f" --key-from {self.key_from.value}" if self.key_from else "")

    def remap(self, url: str) -> str:
        """``url`` moved by the rule for it (an exact rule, else the longest prefix), or as is."""
        if not url or not self.url_rules:
            return url
        seen = _comparable(url)
        best: UrlRule | None = None
        for rule in self.url_rules:
            old = _comparable(rule.old)
            if not rule.prefix and seen == old:
                return rule.new
            if rule.prefix and seen.startswith(old) and (best is None or len(old) > len(best.old)):
                best = rule
        return best.new + url[len(best.old) :] if best else url

    def subject_of(self, thread: Thread, *, identifier_is_key: bool) -> tuple[list[str], str]:
        """The thread's candidate subject keys, best first (the first is a new subject's key;
        the others find a subject the site already has), and its subject's URL.

        ``identifier_is_key``: the format's identifier is what the site itself named the page
        by (Disqus's ``<id>``), so it is the key by default; WordPress's post id is not."""
        url = self.remap(http_url(thread.address))
        path = page_key(url or thread.address)
        identifier = thread.identifier
        by_default = [identifier if identifier_is_key else "", path, url]
        order = {
            None: by_default,
            KeyFrom.PATH: [path, identifier if identifier_is_key else "", url],
            KeyFrom.URL: [url, identifier if identifier_is_key else "", path],
            KeyFrom.ID: [identifier, path, url],
        }[self.key_from]
        keys = [k for k in dict.fromkeys(order) if k and len(k) <= KEY_LENGTH]
        return keys or [thread.fallback[:KEY_LENGTH]], url
