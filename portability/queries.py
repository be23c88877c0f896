"""Every read of the portability app: a site's export (JSON lines or Disqus XML) and a user's own
data, each streamed as bytes a chunk at a time (keyset pages of a few thousand rows), so memory
stays bounded whatever the size of the site or of the user's history; and where an import would
put each thread of a file (``import_preview``, the import's dry run).

The JSON lines export is documented in docs/API.md ("Site export"); importing it
(``import_comments --format json``) into an empty site rebuilds the same site.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from xml.sax.saxutils import escape, quoteattr

from django.db.models import Count, Q
from django.utils import timezone as django_timezone

from comments import hooks
from comments.models import Comment, CommentContent, ExternalIdentity, Follow, Site, Status, Subject, User
from comments.queries import subject_ids_by_key
from infra import encoding
from likes.models import Like
from moderation.models import AuditEntry, Report, Sanction

from . import formats
from .formats.native import FORMAT_NAME, VERSION
from .keys import ImportOptions
from .models import ImportedItem, ItemKind
from .sql import fetch, row_time, table

PAGE = 2_000

# --- a site ------------------------------------------------------------------------------------


def _subjects(site: Site) -> Iterator[Subject]:
    after = 0
    while True:
        page = list(Subject.objects.filter(site=site, pk__gt=after).order_by("pk")[:PAGE])
        if not page:
            return
        yield from page
        after = page[-1].pk


_IDENTITY = (
    "SELECT {column} FROM {identities} ei WHERE ei.user_id = c.author_id AND ei.site_id = %s ORDER BY ei.id LIMIT 1"
)


def _comment_rows(site: Site, subject_id: int) -> Iterator[tuple]:
    """The subject's comments with their content and author, parents first (by path)."""
    identities = table(ExternalIdentity)
    sql = (
        "SELECT c.id, c.reply_to_id, c.status, c.visibility, c.pinned, c.featured, c.floor, c.created_at, c.edited_at, "
        "c.path, cc.body, cc.html, cc.author_ip, cc.user_agent, u.username, u.display_name, u.avatar_url, "
        f"({_IDENTITY.format(column='ei.external_id', identities=identities)}), "
        f"({_IDENTITY.format(column='ei.email', identities=identities)}) "
        # The content joined on the subject as well as the id: on Citus, a join of two
        # distributed tables must pair their distribution columns, and the whole statement then
        # goes to the subject's shard.
        f"FROM {table(Comment)} c JOIN {table(CommentContent)} cc ON cc.comment_id = c.id AND cc.subject_id = c.subject_id "
        f"LEFT JOIN {table(User)} u ON u.id = c.author_id "
        f"WHERE c.subject_id = %s AND c.path > %s ORDER BY c.path LIMIT {PAGE}"
    )
    after = ""
    while True:
        rows = fetch(sql, [site.pk, site.pk, subject_id, after])
        if not rows:
            return
        yield from rows
        after = rows[-1][9]


def _author(
    username: str | None, display_name: str | None, avatar: str | None, external_id: str | None, email: str | None
) -> dict | None:
    if username is None:
        return None
    return {
        # The author's id on the site (an SSO or imported identity); accounts of this service
        # with none are named by their username.
        "id": external_id or f"local:{username}",
        "name": display_name or username,
        "email": email or "",
        "avatar": avatar or None,
    }


def _line(value: dict) -> bytes:
    return encoding.dumps(value) + b"\n"


def site_export_json(*, site: Site) -> Iterator[bytes]:
    """The site as JSON lines: a header, then each subject followed by its comments, parents
    before their replies (docs/API.md, "Site export")."""
    yield _line(
        {
            "type": "export",
            "format": FORMAT_NAME,
            "version": VERSION,
            "site": site.key,
            "name": site.name,
            "exported_at": django_timezone.now(),
        }
    )
    for subject in _subjects(site):
        yield _line(
            {
                "type": "subject",
                "id": subject.pk,
                "key": subject.key,
                "title": subject.title,
                "url": subject.url,
                "mode": subject.mode,
                "state": subject.state,
                "created_at": subject.created_at,
            }
        )
        for (
            pk,
            reply_to_id,
            status,
            visibility,
            pinned,
            featured,
            floor,
            created_at,
            edited_at,
            _path,
            body,
            html,
            ip,
            user_agent,
            *author,
        ) in _comment_rows(site, subject.pk):
            yield _line(
                {
                    "type": "comment",
                    "id": pk,
                    "subject_id": subject.pk,
                    "reply_to_id": reply_to_id,
                    "author": _author(*author),
                    "body": body,
                    "html": html,
                    "status": status,
                    "visibility": visibility,
                    "pinned": bool(pinned),
                    "featured": bool(featured),
                    "floor": floor,
                    "created_at": row_time(created_at),
                    "edited_at": row_time(edited_at),
                    "ip": ip,
                    "user_agent": user_agent,
                }
            )


# Characters XML 1.0 cannot carry, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(value: object) -> str:
    return escape(_NOT_XML.sub("", str(value or "")))


def _attr(value: object) -> str:
    return quoteattr(_NOT_XML.sub("", str(value)))


def _xml_time(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _flag(value: bool) -> str:
    return "true" if value else "false"


def site_export_disqus(*, site: Site) -> Iterator[bytes]:
    """The site as a Disqus XML export: a ``<thread>`` per subject (its key as the identifier),
    then a ``<post>`` per comment (its HTML as the message). Held comments (pending, shadow) say
    ``<isApproved>false</isApproved>``; friends-only visibility, flags and edit times have no
    place in the format and are left out. Author usernames are their ids on the site."""
    yield (
        b'<?xml version="1.0" encoding="utf-8"?>\n'
        b'<disqus xmlns="http://disqus.com" xmlns:dsq="http://disqus.com/disqus-internals">\n'
    )
    for subject in _subjects(site):
        yield (
            f"  <thread dsq:id={_attr(subject.pk)}><id>{_text(subject.key)}</id><forum>{_text(site.key)}</forum>"
            f"<link>{_text(subject.url)}</link><title>{_text(subject.title)}</title><message/>"
            f"<createdAt>{_xml_time(subject.created_at)}</createdAt><isClosed>{_flag(subject.state == 'closed')}</isClosed>"
            "<isDeleted>false</isDeleted></thread>\n"
        ).encode()
    for subject in _subjects(site):
        for (
            pk,
            reply_to_id,
            status,
            _visibility,
            _pinned,
            _featured,
            _floor,
            created_at,
            _edited_at,
            _path,
            _body,
            html,
            ip,
            _user_agent,
            *author_row,
        ) in _comment_rows(site, subject.pk):
            author = _author(*author_row)
            parts = [
                f"  <post dsq:id={_attr(pk)}><id/><message>{_text(html)}</message>",
                f"<createdAt>{_xml_time(row_time(created_at))}</createdAt>",  # type: ignore[arg-type]  # NOT NULL
                f"<isDeleted>{_flag(status == Status.DELETED)}</isDeleted><isSpam>{_flag(status == Status.REJECTED)}</isSpam>",
            ]
            if status in (Status.PENDING, Status.SHADOW):
                parts.append("<isApproved>false</isApproved>")
            if author is not None:
                parts.append(
                    f"<author><email>{_text(author['email'])}</email><name>{_text(author['name'])}</name>"
                    f"<isAnonymous>false</isAnonymous><username>{_text(author['id'])}</username></author>"
                )
            if ip:
                parts.append(f"<ipAddress>{_text(ip)}</ipAddress>")
            parts.append(f"<thread dsq:id={_attr(subject.pk)}/>")
            if reply_to_id is not None:
                parts.append(f"<parent dsq:id={_attr(reply_to_id)}/>")
            parts.append("</post>\n")
            yield "".join(parts).encode()
    yield b"</disqus>\n"


# --- a user ------------------------------------------------------------------------------------

USER_DATA_FORMAT = "comments-user-data"


def _paged(sql: str, params: list, key: int = 0) -> Iterator[tuple]:
    """Rows of ``sql`` (which ends ``WHERE ... AND <key column> > %s ORDER BY <key column>``),
    a page at a time; ``key``: the position of the key column in a row."""
    after = 0
    while True:
        rows = fetch(f"{sql} LIMIT {PAGE}", [*params, after])
        if not rows:
            return
        yield from rows
        after = rows[-1][key]


def _user_comments(user: User) -> Iterator[dict]:
    sql = (
        "SELECT c.id, c.subject_id, s.key, s.title, s.url, si.key, c.reply_to_id, c.status, c.visibility, c.pinned, "
        "c.featured, c.floor, c.like_count, c.created_at, c.edited_at, cc.body, cc.html, cc.author_ip, cc.user_agent "
        # On Citus, the content is joined on the subject as well as the id (joins of distributed
        # tables pair their distribution columns).
        f"FROM {table(Comment)} c JOIN {table(CommentContent)} cc ON cc.comment_id = c.id AND cc.subject_id = c.subject_id "
        f"JOIN {table(Subject)} s ON s.id = c.subject_id JOIN {table(Site)} si ON si.id = s.site_id "
        "WHERE c.author_id = %s AND c.id > %s ORDER BY c.id"
    )
    for (
        pk,
        subject_id,
        key,
        title,
        url,
        site_key,
        reply_to_id,
        status,
        visibility,
        pinned,
        featured,
        floor,
        like_count,
        created_at,
        edited_at,
        body,
        html,
        ip,
        user_agent,
    ) in _paged(sql, [user.pk]):
        yield {
            "id": pk,
            "site": site_key,
            "subject": {"id": subject_id, "key": key, "title": title, "url": url},
            "reply_to_id": reply_to_id,
            "status": status,
            "visibility": visibility,
            "pinned": bool(pinned),
            "featured": bool(featured),
            "floor": floor,
            "like_count": like_count,
            "body": body,
            "html": html,
            "created_at": row_time(created_at),
            "edited_at": row_time(edited_at),
            "ip": ip,
            "user_agent": user_agent,
        }


def _user_likes(user: User) -> Iterator[dict]:
    sql = (
        f"SELECT l.id, l.comment_id, l.subject_id, si.key, l.created_at FROM {table(Like)} l "
        f"JOIN {table(Subject)} s ON s.id = l.subject_id JOIN {table(Site)} si ON si.id = s.site_id "
        "WHERE l.user_id = %s AND l.active AND l.id > %s ORDER BY l.id"
    )
    for _, comment_id, subject_id, site_key, created_at in _paged(sql, [user.pk]):
        yield {"comment_id": comment_id, "subject_id": subject_id, "site": site_key, "liked_at": row_time(created_at)}


def _user_reports(user: User) -> Iterator[dict]:
    for report in Report.objects.filter(user=user).order_by("pk").iterator(chunk_size=PAGE):
        yield {
            "comment_id": report.comment_id,
            "reason": report.reason,
            "detail": report.detail,
            "created_at": report.created_at,
        }


def _user_sanctions(user: User) -> Iterator[dict]:
    for sanction in Sanction.objects.filter(user=user).select_related("site").order_by("pk").iterator(chunk_size=PAGE):
        yield {
            "site": sanction.site.key,
            "kind": sanction.kind,
            "until": sanction.until,
            "reason": sanction.reason,
            "created_at": sanction.created_at,
        }


def _user_identities(user: User) -> Iterator[dict]:
    for identity in ExternalIdentity.objects.filter(user=user).select_related("site").order_by("pk"):
        yield {
            "site": identity.site.key,
            "external_id": identity.external_id,
            "email": identity.email,
            "created_at": identity.created_at,
        }


def _follows(user: User, *, following: bool) -> Iterator[dict]:
    rows = Follow.objects.filter(follower=user) if following else Follow.objects.filter(followee=user)
    other = "followee" if following else "follower"
    for follow in rows.select_related(other).order_by("pk").iterator(chunk_size=PAGE):
        person = getattr(follow, other)
        yield {"user": {"id": person.pk, "name": person.public_name}, "since": follow.created_at}


def _moderation_actions(user: User) -> Iterator[dict]:
    entries = (
        AuditEntry.objects.filter(actor=user)
        .order_by("pk")
        .values_list("site__key", "action", "comment_id", "created_at")
    )
    for site_key, action, comment_id, created_at in entries.iterator(chunk_size=PAGE):
        yield {"site": site_key, "action": action, "comment_id": comment_id, "created_at": created_at}


def _array(items: Iterable[dict]) -> Iterator[bytes]:
    yield b"["
    first = True
    for item in items:
        yield (b"" if first else b",") + encoding.dumps(item)
        first = False
    yield b"]"


def user_data_export(*, user: User) -> Iterator[bytes]:
    """Everything this service keeps about ``user``, as one JSON document (docs/API.md, "Your
    data"): their account, identities on host sites, comments (with the IP address and user
    agent they were posted from), likes, reports, sanctions, follows, sign-in tokens (their
    dates, never the tokens) and, for moderators, the moderation actions they took."""
    head = {
        "format": USER_DATA_FORMAT,
        "version": 1,
        "exported_at": django_timezone.now(),
        "user": {
            "id": user.pk,
            "username": user.username,
            "name": user.public_name,
            "email": user.email,
            "avatar": user.avatar_url or None,
            "date_joined": user.date_joined,
            "last_login": user.last_login,
            "is_active": user.is_active,
        },
        "moderated_sites": sorted(user.moderated_sites.values_list("key", flat=True)),
        "tokens": [
            {"site": site_key, "created_at": created, "expires_at": expires}
            for site_key, created, expires in user.apitoken_set.order_by("pk").values_list(
                "site__key", "created_at", "expires_at"
            )
        ],
    }
    yield encoding.dumps(head)[:-1]  # the object stays open for the streamed lists
    sections = (
        ("identities", _user_identities(user)),
        ("comments", _user_comments(user)),
        ("likes", _user_likes(user)),
        ("reports", _user_reports(user)),
        ("sanctions", _user_sanctions(user)),
        ("following", _follows(user, following=True)),
        ("followers", _follows(user, following=False)),
        ("moderation_actions", _moderation_actions(user)),
    )
    for name, items in sections:
        yield b',"' + name.encode() + b'":'
        yield from _array(items)
    yield b"}\n"


# --- finding a person (GDPR requests) --------------------------------------------------------

CANDIDATES_SHOWN = 20


def users_find(
    *, email: str | None = None, site_key: str | None = None, external_id: str | None = None, name: str | None = None
) -> list[User]:
    """The users an operator's request names, by id order: by ``email`` (the account's own, a
    site's SSO identity's, and those other apps keep: ``hooks.users_with_email``), by a site's
    ``external_id`` (its SSO user id), or by ``name`` found in a display name or username (at
    most ``CANDIDATES_SHOWN``)."""
    users = User.objects.order_by("pk")
    if email is not None:
        ids = set(User.objects.filter(email__iexact=email).values_list("pk", flat=True))
        ids.update(ExternalIdentity.objects.filter(email__iexact=email).values_list("user_id", flat=True))
        for _, answered in hooks.users_with_email.send(sender=User, email=email):
            ids.update(answered)  # type: ignore[arg-type]  # each receiver answers a set of ids
        return list(users.filter(pk__in=ids))
    if external_id is not None:
        return list(users.filter(externalidentity__site__key=site_key, externalidentity__external_id=external_id))
    if name is not None:
        found = users.filter(Q(display_name__icontains=name) | Q(username__icontains=name))
        return list(found[:CANDIDATES_SHOWN])
    raise ValueError("users_find: name an email, an external id or a name")


def users_comment_counts(*, user_ids: list[int]) -> dict[int, int]:
    """How many comments each of the users wrote (every status), for telling candidates apart."""
    counted = Comment.objects.filter(author_id__in=user_ids).values("author_id").annotate(n=Count("pk"))
    return {row["author_id"]: row["n"] for row in counted}


# --- an import's threads and the subjects they go to ------------------------------------------


def subjects_found(*, site: Site, keys: set[str], urls: set[str]) -> tuple[dict[str, int], dict[str, int]]:
    """The site's subjects with one of ``keys`` (by key) and with one of ``urls`` (by URL, the
    oldest of those sharing one): what an import's threads may join."""
    by_key = subject_ids_by_key(site=site, keys=keys)
    by_url: dict[str, int] = {}
    if urls:
        for url, pk in Subject.objects.filter(site=site, url__in=urls).order_by("pk").values_list("url", "pk"):
            by_url.setdefault(url, pk)
    return by_key, by_url


def subject_of_thread(keys: list[str], url: str, by_key: dict[str, int], by_url: dict[str, int]) -> int | None:
    """The existing subject a thread joins: the one of its best candidate key, else the one at its
    URL; None for a new one."""
    return next((by_key[k] for k in keys if k in by_key), None) or by_url.get(url)


@dataclass(slots=True)
class PlannedThread:
    """Where an import would put one thread of the file, and how many comments it brings."""

    source_id: str
    action: str  # "create", "join" (an existing subject, or one made for an earlier thread), "imported before"
    key: str
    url: str
    title: str
    comments: int = 0
    subject_id: int | None = None  # the existing subject, if any


@dataclass
class ImportPreview:
    """What ``import_comments --dry-run`` prints: every thread of the file and its subject."""

    site: Site
    threads: list[PlannedThread] = field(default_factory=list)
    comments_without_thread: int = 0  # comments whose thread is not in the file
    skipped: int = 0  # records the import would skip (it says why)

    def lines(self) -> list[str]:
        out = [f"dry run: nothing written; site {self.site.key!r}"]
        out += [
            f"{t.action}: key {t.key!r} url {t.url or '-'!r} title {t.title!r}: {t.comments:,} comments "
            f"(thread {t.source_id})"
            for t in self.threads
        ]
        made = sum(t.action == "create" for t in self.threads)
        out.append(
            f"{len(self.threads):,} threads: {made:,} new subjects; "
            f"{sum(t.comments for t in self.threads):,} comments in them; "
            f"{self.comments_without_thread:,} comments of threads not in the file; {self.skipped:,} records skipped"
        )
        return out


def import_preview(*, site: Site, format: str, path: str, options: ImportOptions) -> ImportPreview:
    """Where an import of the file with ``options`` would put each thread (as
    ``services.import_file`` decides it), reading the file and the database and writing
    nothing. Holds one entry per thread of the file in memory. Raises ``formats.FormatError``."""
    reader = formats.reader_for(format, path)
    preview = ImportPreview(site=site)
    planned: dict[str, PlannedThread] = {}
    keys_of: dict[str, list[str]] = {}
    comments: Counter[str] = Counter()
    for record in reader.records():
        if isinstance(record, formats.Thread):
            if record.source_id not in planned:
                keys, url = options.subject_of(record, identifier_is_key=reader.identifier_is_key)
                planned[record.source_id] = PlannedThread(record.source_id, "create", keys[0], url, record.title)
                keys_of[record.source_id] = keys
        elif isinstance(record, formats.Comment):
            comments[record.thread_id] += 1
        else:
            preview.skipped += 1
    preview.comments_without_thread = sum(n for thread_id, n in comments.items() if thread_id not in planned)
    made: dict[str, PlannedThread] = {}  # new subjects by key, as the import makes them
    threads = list(planned.values())
    for start in range(0, len(threads), PAGE):
        batch = threads[start : start + PAGE]
        imported = dict(
            ImportedItem.objects.filter(
                site=site, source=reader.name, kind=ItemKind.THREAD, source_id__in=[t.source_id for t in batch]
            ).values_list("source_id", "target_id")
        )
        fresh = [t for t in batch if t.source_id not in imported]
        by_key, by_url = subjects_found(
            site=site, keys={k for t in fresh for k in keys_of[t.source_id]}, urls={t.url for t in fresh if t.url}
        )
        for thread in batch:
            thread.comments = comments[thread.source_id]
            if thread.source_id in imported:
                thread.action, thread.subject_id = "imported before", imported[thread.source_id]
                continue
            thread.subject_id = subject_of_thread(keys_of[thread.source_id], thread.url, by_key, by_url)
            if thread.subject_id is None and thread.key in made:
                thread.action, thread.url, thread.title = "join", made[thread.key].url, made[thread.key].title
            elif thread.subject_id is None:
                made[thread.key] = thread
            else:
                thread.action = "join"
        existing = {t.subject_id for t in batch if t.subject_id is not None}
        for pk, key, url, title in Subject.objects.filter(site=site, pk__in=existing).values_list(
            "pk", "key", "url", "title"
        ):
            for thread in batch:
                if thread.subject_id == pk:
                    thread.key, thread.url, thread.title = key, url, title
    preview.threads = threads
    return preview
