"""What every reader makes and shares: the records (``Thread``, ``Comment``, ``Skipped``), the
``Reader`` base, ``FormatError``, and the cleaning of the values a file holds."""

from __future__ import annotations

import gzip
import hashlib
import io
import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from comments.models import Status, Visibility
from comments.names import clean_display_name


class FormatError(Exception):
    """The file cannot be read as the format asked for; the message says why, for a person."""


@dataclass(slots=True)
class Author:
    """``external_id`` is the author's id on the site (an ``ExternalIdentity``): the same one
    in two imports (or a later SSO sign-in with it) is the same user."""

    external_id: str
    name: str
    email: str = ""
    avatar: str = ""


@dataclass(slots=True)
class Thread:
    """A page with comments, as the source knows it. Its subject's key and URL come from these
    and the import's options (``portability.keys``)."""

    source_id: str
    identifier: str = ""  # what the site or the source named the page by (Disqus's <id>), if anything
    address: str = ""  # the page: its URL (or its path, for Isso), as the source holds it
    fallback: str = ""  # the key when there is neither (a source's own thread id, as "disqus:<id>")
    title: str = ""
    closed: bool = False
    mode: str = ""  # "" for the site's default
    created_at: datetime | None = None


@dataclass(slots=True)
class Comment:
    source_id: str
    thread_id: str
    parent_id: str | None
    author: Author | None
    body: str
    markup: str  # MARKDOWN, HTML or HTML_LINES (see portability.markup)
    created_at: datetime
    status: str = Status.PUBLISHED
    visibility: str = Visibility.PUBLIC
    pinned: bool = False
    featured: bool = False
    edited_at: datetime | None = None
    ip: str | None = None
    user_agent: str = ""


@dataclass(slots=True)
class Skipped:
    where: str  # "post 299619020", "line 12"
    reason: str  # a short, fixed phrase: the summary counts by it


Record = Thread | Comment | Skipped

MARKDOWN, HTML, HTML_LINES = "markdown", "html", "lines"
# A body longer than this is not imported (reported): far beyond any comment, it is what a
# broken or hostile file looks like. Bodies between COMMENTS_MAX_BODY and this are imported
# whole: the limit on new posts does not cut history.
MAX_BODY = 50_000
SOURCE_ID_LENGTH = 255


@dataclass
class Reader:
    """A format's reader over one file. ``records()`` yields the file's records in order."""

    path: str
    threads_explicit = True  # False: threads are named by their comments (one record per sighting)
    identifier_is_key = True  # a thread's identifier is its subject key unless the import says otherwise
    name = ""

    def records(self) -> Iterator[Record]:
        raise NotImplementedError

    # --- helpers shared by the readers ---------------------------------------------------

    def external_id(self, account: str) -> str:
        """An author with an account on the source system: ``<format>:<their id>``."""
        return fit_id(f"{self.name}:{account}")

    def guest(self, name: str, email: str, avatar: str = "") -> Author | None:
        """An author without an account, known by e-mail (else by name); None for nobody."""
        name, email = clean_text(name).strip(), clean_text(email).strip()
        if not name and not email:
            return None
        digest = hashlib.sha256((email.lower() or name.lower()).encode()).hexdigest()[:32]
        return Author(
            external_id=f"{self.name}-guest:{digest}", name=author_name(name, "Guest"), email=email, avatar=avatar
        )


def author_name(*candidates: str) -> str:
    """The first of ``candidates`` (an author's name in the file, then what a reader falls back
    to) with something left once kept as every display name is (``clean_display_name``: one
    line of visible text): a file is outside input like a sign-in."""
    for candidate in candidates:
        name = clean_display_name(candidate)
        if name:
            return name
    return ""


def fit_id(value: str) -> str:
    """A source id that fits the column: long ones keep a prefix and a digest of the whole."""
    if len(value) <= SOURCE_ID_LENGTH:
        return value
    return value[:200] + ":" + hashlib.sha256(value.encode()).hexdigest()


def clean_text(value) -> str:
    """Text the database can store: no NUL, no lone surrogate (JSON allows ``"\\ud800"``)."""
    if not value:
        return ""
    value = str(value).replace("\x00", "")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value


def clean_ip(value) -> str | None:
    """An IP address as stored, or None for anything else (Remark42 keeps hashes there)."""
    if not value or not isinstance(value, str):
        return None
    try:
        return str(ipaddress.ip_address(value.strip()))
    except ValueError:
        return None


def http_url(value: str) -> str:
    value = clean_text(value).strip()
    return value[:2000] if value.startswith(("http://", "https://")) else ""


def parse_time(value) -> datetime | None:
    """An ISO-8601 time (``Z`` or an offset; a time without one is UTC), or None."""
    if not value or not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace(" ", "T", 1))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if moment.year < 1970:
        return None  # zero dates ("0001-01-01", "0000-00-00") are how exports say "none"
    return moment.astimezone(UTC)


def open_binary(path: str) -> io.BufferedIOBase:
    """The file's bytes, gunzipped when it is gzip-compressed (Disqus and Remark42 hand their
    exports out as ``.gz``)."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - handed to the caller, which closes it
    except OSError as exc:
        raise FormatError(f"cannot open {path}: {exc.strerror or exc}") from None
    if handle.peek(2)[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=handle, mode="rb")
    return handle
