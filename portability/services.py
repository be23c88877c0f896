"""Every write of the portability app: importing a site's history, erasing a user's data, and
the retention job that scrubs old IP addresses.

An import (``import_file``) reads the file once, streaming, into staged rows
(``StagedRecord``); settles subjects (a thread becomes the subject with its key or URL, found or
created); drops what cannot or need not be imported (duplicates in the file, items imported
before, comments of unknown threads); then inserts the comments in time order, parents first,
a batch at a time: ids from the original dates (``portability.ids``), paths, floors and every
counter as ``comment_create`` keeps them, authors as users of the site (an
``ExternalIdentity`` each), bodies through the product's renderer (``portability.markup``),
and the source id of everything in ``ImportedItem``, which makes a second import of the same
file change nothing. Memory holds one batch, whatever the size of the file.

Imported comments skip the content checks of new posts (the word filter, pre-moderation): they
are history, already moderated where they were written; their statuses come from the source.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from comments import hooks, paths, replicas
from comments.models import (
    GONE_STATUSES,
    Comment,
    CommentContent,
    ExternalIdentity,
    Site,
    Status,
    Subject,
    SubjectState,
    User,
    is_counted,
)
from comments.names import clean_display_name
from comments.queries import subject_ids_by_key
from comments.rendering import render_markdown
from comments.services import pages_change, pages_change_many, subjects_create
from likes.bulk_rows import sources

from . import formats
from .ids import history_id
from .markup import to_markdown
from .models import ErasureMode, ImportedItem, ImportRun, ItemKind, RunState, SitePrivacy, StagedRecord
from .sql import among, execute, fetch, insert_rows, param_time, row_time, table

STAGE_BATCH = 5_000  # records parsed per insert into the staging table
THREAD_BATCH = 1_000
COMMENT_BATCH = 2_000  # comments per insert transaction
CACHE_LIMIT = 100_000  # authors and threads remembered between batches (then forgotten)
EXAMPLES = 5  # where-in-the-file examples kept per reason
FIX_UP_ROUNDS = 100  # passes placing replies dated before their parent (one chain level each)

Progress = Callable[[str, int, "int | None"], None]


class ImportBusy(Exception):
    """Another import into the same site is running."""


@dataclass
class ImportSummary:
    """What an import did: the command prints it, the admin shows it, the run keeps it."""

    format: str
    run_id: int | None = None  # the ImportRun that keeps this summary
    records: int = 0
    subjects_created: int = 0
    subjects_matched: int = 0  # threads that joined an existing subject of the site
    subjects_known: int = 0  # threads imported by an earlier run
    users_created: int = 0
    comments: Counter = field(default_factory=Counter)  # imported, by status
    skipped: Counter = field(default_factory=Counter)  # not imported, by reason
    notes: Counter = field(default_factory=Counter)  # imported, with a change, by reason
    examples: dict = field(default_factory=lambda: defaultdict(list))
    seconds: float = 0.0

    def skip(self, reason: str, where: str | Sequence[str] = (), count: int = 1) -> None:
        self.skipped[reason] += count
        self._example(reason, where)

    def note(self, reason: str, where: str | Sequence[str] = (), count: int = 1) -> None:
        self.notes[reason] += count
        self._example(reason, where)

    def _example(self, reason: str, where) -> None:
        kept = self.examples[reason]
        for place in [where] if isinstance(where, str) else where:
            if len(kept) < EXAMPLES:
                kept.append(place)

    @property
    def imported(self) -> int:
        return sum(self.comments.values())

    def as_dict(self) -> dict:
        return {
            "format": self.format,
            "records": self.records,
            "seconds": round(self.seconds, 1),
            "subjects": {
                "created": self.subjects_created,
                "matched": self.subjects_matched,
                "already_imported": self.subjects_known,
            },
            "users_created": self.users_created,
            "comments": dict(self.comments),
            "imported": self.imported,
            "skipped": dict(self.skipped),
            "notes": dict(self.notes),
            "examples": {k: v for k, v in self.examples.items() if v},
        }

    def lines(self) -> list[str]:
        """The summary for a person."""
        statuses = ", ".join(f"{n:,} {s}" for s, n in sorted(self.comments.items())) or "none"
        out = [
            f"read {self.records:,} records; the import took {self.seconds:.1f} s",
            f"subjects: {self.subjects_created:,} created, {self.subjects_matched:,} matched to existing subjects, "
            f"{self.subjects_known:,} imported before",
            f"comments imported: {self.imported:,} ({statuses}); users created: {self.users_created:,}",
        ]
        for title, counts in (("skipped", self.skipped), ("imported with a change", self.notes)):
            if counts:
                out.append(f"{title}: {sum(counts.values()):,}")
                for reason, n in counts.most_common():
                    examples = self.examples.get(reason)
                    out.append(f"  {n:,} {reason}" + (f" (e.g. {', '.join(examples)})" if examples else ""))
        if not self.skipped:
            out.append("skipped: none")
        return out


# --- staging ---------------------------------------------------------------------------------

_STAGED_COLUMNS = (
    "run_id",
    "seq",
    "kind",
    "source_id",
    "keys",
    "url",
    "title",
    "closed",
    "mode",
    "thread_id",
    "parent_id",
    "sort_at",
    "created_at",
    "edited_at",
    "status",
    "visibility",
    "pinned",
    "featured",
    "author_id",
    "author_name",
    "author_email",
    "author_avatar",
    "body",
    "markup",
    "ip",
    "user_agent",
)


def _staged_row(run_id: int, seq: int, record) -> tuple:
    if isinstance(record, formats.Thread):
        keys = "\n".join(k.replace("\n", " ") for k in record.keys)
        return (
            run_id,
            seq,
            ItemKind.THREAD,
            record.source_id,
            keys,
            record.url,
            record.title,
            record.closed,
            record.mode,
            "",
            None,
            None,
            record.created_at,
            None,
            "",
            "",
            False,
            False,
            "",
            "",
            "",
            "",
            "",
            "",
            None,
            "",
        )
    author = record.author
    return (
        run_id,
        seq,
        ItemKind.COMMENT,
        record.source_id,
        "",
        "",
        "",
        False,
        "",
        record.thread_id,
        record.parent_id,
        record.created_at,
        record.created_at,
        record.edited_at,
        record.status,
        record.visibility,
        record.pinned,
        record.featured,
        author.external_id if author else "",
        author.name[:255] if author else "",
        author.email[:254] if author else "",
        author.avatar[:1000] if author else "",
        record.body,
        record.markup,
        record.ip,
        record.user_agent[:512],
    )


# --- the import ------------------------------------------------------------------------------


def import_file(
    *,
    site: Site,
    format: str,
    path: str,
    actor: User | None = None,
    source_name: str = "",
    progress: Progress | None = None,
    workers: int = 1,
) -> ImportSummary:
    """Import a file of ``format`` into ``site``; idempotent (see the module's docstring).
    Raises ``formats.FormatError`` (nothing imported) for a file that cannot be read as
    ``format``, ``ImportBusy`` while another import into the site runs. A run that fails
    midway keeps the batches it committed; running it again imports the rest. ``workers``:
    processes converting and rendering bodies (forked: for a command, not a web worker)."""
    reader = formats.reader_for(format, path)
    with _site_import_lock(site):
        run = ImportRun.objects.create(site=site, format=format, source_name=source_name[:255], started_by=actor)
        job = _ImportJob(site=site, run=run, reader=reader, progress=progress or (lambda *args: None), workers=workers)
        job.summary.run_id = run.pk
        try:
            job.execute()
        except BaseException as exc:
            job.clean_up()
            ImportRun.objects.filter(pk=run.pk).update(
                state=RunState.FAILED, error=str(exc)[:5000], summary=job.summary.as_dict(), finished_at=timezone.now()
            )
            raise
        job.clean_up()
        ImportRun.objects.filter(pk=run.pk).update(
            state=RunState.DONE, summary=job.summary.as_dict(), finished_at=timezone.now()
        )
    _audit(
        site_id=site.pk,
        actor=actor,
        action="data_import",
        reason=f"{format} {source_name}: " + "; ".join(job.summary.lines()[1:]),
    )
    return job.summary


class _site_import_lock:
    """One import at a time per site (a PostgreSQL advisory lock, held by the session; SQLite
    has one writer anyway)."""

    KEY = 1601  # the lock's namespace: issue 16, part 1

    def __init__(self, site: Site):
        self.site_id = site.pk

    def __enter__(self):
        if (
            connection.vendor == "postgresql"
            and not fetch("SELECT pg_try_advisory_lock(%s, %s)", [self.KEY, self.site_id])[0][0]
        ):
            raise ImportBusy("Another import into this site is running; try again when it has finished.")

    def __exit__(self, *exc):
        if connection.vendor == "postgresql":
            fetch("SELECT pg_advisory_unlock(%s, %s)", [self.KEY, self.site_id])


@dataclass(slots=True)
class _Placed:
    """A comment a reply can hang under: one stored before this batch, or one of the batch."""

    id: int
    subject_id: int
    path: str
    depth: int
    root_id: int | None
    node: _Node | None = None  # set for a comment of the current batch


@dataclass(slots=True)
class _Staged:
    seq: int
    source_id: str
    thread_id: str
    parent_id: str | None
    sort_at: datetime
    created_at: datetime
    edited_at: datetime | None
    status: str
    visibility: str
    pinned: bool
    featured: bool
    author_id: str
    author_name: str
    author_email: str
    author_avatar: str
    body: str
    markup: str
    ip: str | None
    user_agent: str
    rendered: tuple[str, str] | None = None  # (Markdown body, HTML), from _render


_STAGED_READ = (
    "seq, source_id, thread_id, parent_id, sort_at, created_at, edited_at, status, visibility, pinned, featured, "
    "author_id, author_name, author_email, author_avatar, body, markup, ip, user_agent"
)


def _render(body_and_markup: tuple[str, str]) -> tuple[str, str]:
    """An imported body as stored: Markdown and its HTML (run in the render pool's processes)."""
    body = to_markdown(*body_and_markup)
    return body, render_markdown(body) if body else ""


@dataclass(slots=True)
class _Node:
    """A comment of the batch being inserted."""

    row: _Staged
    subject_id: int
    parent: _Placed | None
    id: int = 0
    path: str = ""
    depth: int = 0
    root_id: int | None = None
    floor: int = 0
    status: str = ""
    counted: bool = False
    pinned: bool = False
    featured: bool = False
    reply_count: int = 0
    descendant_count: int = 0
    reply_floor_seq: int = 0
    author_id: int | None = None
    body: str = ""
    html: str = ""


class _ImportJob:
    def __init__(self, *, site: Site, run: ImportRun, reader: formats.Reader, progress: Progress, workers: int = 1):
        self.site, self.run, self.reader, self.progress = site, run, reader, progress
        self.workers = workers
        self.source = reader.name
        self.summary = ImportSummary(format=reader.name)
        self.started = time.monotonic()
        self.users: dict[str, int] = {}  # external id -> user id
        self.subjects: dict[str, int] = {}  # thread source id -> subject id
        self.pinned: dict[int, int] = {}  # subject id -> pinned comments
        self.last_id = 0
        retention = settings.PORTABILITY_IP_RETENTION_DAYS
        self.keep_ip_since = timezone.now() - timedelta(days=retention) if retention else None
        self.staged = table(StagedRecord)
        self.items = table(ImportedItem)
        self.analyzed_at = 0  # comments inserted when the statistics were last refreshed

    def execute(self) -> None:
        self.stage()
        self.place_threads()
        self.analyze()
        total = self.sift_comments()
        self.insert_comments(total)
        self.summary.seconds = time.monotonic() - self.started

    def clean_up(self) -> None:
        execute(f"DELETE FROM {self.staged} WHERE run_id = %s", [self.run.pk])

    # --- 1. the file, streamed into staged rows --------------------------------------------

    def stage(self) -> None:
        rows, seq = [], 0
        self.progress("reading", 0, None)
        for seq, record in enumerate(self.reader.records(), 1):
            if isinstance(record, formats.Skipped):
                self.summary.skip(record.reason, record.where)
            else:
                rows.append(_staged_row(self.run.pk, seq, record))
                if len(rows) >= STAGE_BATCH:
                    insert_rows(StagedRecord, _STAGED_COLUMNS, rows)
                    rows.clear()
            if seq % STAGE_BATCH == 0:
                self.progress("reading", seq, None)
        insert_rows(StagedRecord, _STAGED_COLUMNS, rows)
        if connection.vendor == "postgresql":
            # Fresh statistics: with none, the planner takes the staged rows for a handful and
            # answers every per-row lookup below with a scan of them all.
            execute(f"ANALYZE {self.staged}")
        self.summary.records = seq
        self.progress("reading", seq, seq)

    def analyze(self) -> None:
        """Fresh statistics of the tables the import grows, each time its comments have doubled
        (so a logarithmic number of times; each ANALYZE reads a sample of fixed size). Without
        them (autovacuum off, or behind a bulk load) the planner takes a table the import has
        filled for empty, and answers a batch's lookups of imported items and authors by their
        ids with a scan of everything of the site imported so far: a cost per batch growing
        with the import, quadratic in all (PostgreSQL only; SQLite's plans keep the indexes)."""
        if connection.vendor == "postgresql":
            for model in (ImportedItem, Comment, ExternalIdentity, User):
                execute(f"ANALYZE {table(model)}")

    # --- 2. threads become subjects ---------------------------------------------------------

    def _drop_staged(self, kind: str, condition: str, params: list, reason: str, *, note: bool = False) -> int:
        """Delete the run's staged rows of ``kind`` meeting ``condition`` (over the staged table,
        named in full), counted under ``reason`` with examples."""
        where = f"run_id = %s AND kind = %s AND {condition}"
        examples = fetch(
            f"SELECT source_id FROM {self.staged} WHERE {where} ORDER BY seq LIMIT {EXAMPLES}",
            [self.run.pk, kind, *params],
        )
        if not examples:
            return 0
        count = execute(f"DELETE FROM {self.staged} WHERE {where}", [self.run.pk, kind, *params])
        label = "thread" if kind == ItemKind.THREAD else "comment"
        (self.summary.note if note else self.summary.skip)(reason, [f"{label} {e[0]}" for e in examples], count)
        return count

    def _duplicates(self, kind: str) -> str:
        return (
            f"EXISTS (SELECT 1 FROM {self.staged} b WHERE b.run_id = {self.staged}.run_id AND b.kind = {self.staged}.kind "
            f"AND b.source_id = {self.staged}.source_id AND b.seq < {self.staged}.seq)"
        )

    def _imported(self, kind: str, column: str) -> tuple[str, list]:
        return (
            f"EXISTS (SELECT 1 FROM {self.items} m WHERE m.site_id = %s AND m.source = %s AND m.kind = %s "
            f"AND m.source_id = {self.staged}.{column})",
            [self.site.pk, self.source, kind],
        )

    def place_threads(self) -> None:
        T = ItemKind.THREAD
        if self.reader.threads_explicit:
            self._drop_staged(T, self._duplicates(T), [], "duplicate thread id in the file (first kept)")
        else:  # threads named by each comment: repeats are expected
            execute(
                f"DELETE FROM {self.staged} WHERE run_id = %s AND kind = %s AND {self._duplicates(T)}", [self.run.pk, T]
            )
        condition, params = self._imported(T, "source_id")
        self.summary.subjects_known += execute(
            f"DELETE FROM {self.staged} WHERE run_id = %s AND kind = %s AND {condition}", [self.run.pk, T, *params]
        )
        after = 0
        while True:
            rows = fetch(
                f"SELECT seq, source_id, keys, url, title, closed, mode, created_at FROM {self.staged} "
                f"WHERE run_id = %s AND kind = %s AND seq > %s ORDER BY seq LIMIT {THREAD_BATCH}",
                [self.run.pk, T, after],
            )
            if not rows:
                return
            after = rows[-1][0]
            self._subjects_for(rows)

    def _subjects_for(self, rows: list[tuple]) -> None:
        """Find or create the subject of each thread, and remember which it is."""
        threads = [
            (source_id, keys.split("\n"), url, title, closed, mode, row_time(created))
            for _, source_id, keys, url, title, closed, mode, created in rows
        ]
        every_key = {k for t in threads for k in t[1]}
        urls = {t[2] for t in threads if t[2]}
        by_key = subject_ids_by_key(self.site, every_key)
        by_url: dict[str, int] = {}
        if urls:
            for url, pk in Subject.objects.filter(site=self.site, url__in=urls).order_by("pk").values_list("url", "pk"):
                by_url.setdefault(url, pk)
        new: dict[str, Subject] = {}
        dates: dict[str, datetime] = {}
        for _source_id, keys, url, title, closed, mode, created in threads:
            if not any(k in by_key for k in keys) and url not in by_url and keys[0] not in new:
                new[keys[0]] = Subject(
                    site=self.site,
                    key=keys[0],
                    title=title[:300],
                    url=url[:2000],
                    mode=mode or self.site.default_mode,
                    state=SubjectState.CLOSED if closed else SubjectState.OPEN,
                )
                if created is not None:
                    dates[keys[0]] = created
        if new:
            # Subjects the API made meanwhile win (their keys' rows do); all are read back by key.
            made = subjects_create(self.site, list(new.values()))
            created_ids = {key: pk for key, pk in made.items() if pk == new[key].pk}
            self.summary.subjects_created += len(created_ids)
            by_key.update(made)
            self._date_subjects({created_ids[k]: at for k, at in dates.items() if k in created_ids})
        taken: set[int | None] = set()
        mapping = []
        for source_id, keys, url, *_ in threads:
            subject_id = next((by_key[k] for k in keys if k in by_key), None) or by_url.get(url)
            if keys[0] not in new or subject_id in taken:
                self.summary.subjects_matched += 1
            taken.add(subject_id)
            mapping.append((self.site.pk, self.source, ItemKind.THREAD, source_id, subject_id))
            self._remember(self.subjects, source_id, subject_id)
        insert_rows(ImportedItem, ("site_id", "source", "kind", "source_id", "target_id"), mapping)

    def _date_subjects(self, dates: dict[int, datetime]) -> None:
        """A new subject is dated as its thread in the source (``created_at`` is set on insert)."""
        Subject.objects.bulk_update(
            [Subject(pk=pk, created_at=at) for pk, at in dates.items()], ["created_at"], batch_size=500
        )

    @staticmethod
    def _remember(cache: dict, key, value) -> None:
        if len(cache) >= CACHE_LIMIT:
            cache.clear()
        cache[key] = value

    # --- 3. comments that cannot or need not be imported -----------------------------------

    def sift_comments(self) -> int:
        """Drop duplicates, comments imported before and comments of unknown threads; put
        replies to comments absent from the file at the top level; place replies dated before
        their parent right after it. Returns how many comments are left to insert."""
        C, staged = ItemKind.COMMENT, self.staged
        self._drop_staged(C, self._duplicates(C), [], "duplicate comment id in the file (first kept)")
        condition, params = self._imported(ItemKind.THREAD, "thread_id")
        self._drop_staged(C, f"NOT {condition}", params, "thread not in the file")
        condition, params = self._imported(C, "source_id")
        known = execute(
            f"DELETE FROM {staged} WHERE run_id = %s AND kind = %s AND {condition}", [self.run.pk, C, *params]
        )
        if known:
            self.summary.skip("already imported", count=known)
        imported_parent, params = self._imported(C, "parent_id")
        orphan = (
            f"parent_id IS NOT NULL AND (parent_id = source_id OR (NOT {imported_parent} AND NOT EXISTS "
            f"(SELECT 1 FROM {staged} p WHERE p.run_id = {staged}.run_id AND p.kind = {staged}.kind "
            f"AND p.source_id = {staged}.parent_id)))"
        )
        examples = fetch(
            f"SELECT source_id FROM {staged} WHERE run_id = %s AND kind = %s AND {orphan} ORDER BY seq LIMIT {EXAMPLES}",
            [self.run.pk, C, *params],
        )
        if examples:
            count = execute(
                f"UPDATE {staged} SET parent_id = NULL WHERE run_id = %s AND kind = %s AND {orphan}",
                [self.run.pk, C, *params],
            )
            self.summary.note(
                "reply to a comment not in the file: kept at the top level",
                [f"comment {e[0]}" for e in examples],
                count,
            )
        for _ in range(FIX_UP_ROUNDS):
            # A join, not a lookup of the parent per reply: one pass over the run's rows.
            moved = execute(
                f"UPDATE {staged} SET sort_at = p.sort_at FROM {staged} p WHERE {staged}.run_id = %s AND {staged}.kind = %s "
                f"AND {staged}.parent_id IS NOT NULL AND p.run_id = {staged}.run_id AND p.kind = {staged}.kind "
                f"AND p.source_id = {staged}.parent_id AND {staged}.sort_at < p.sort_at",
                [self.run.pk, C],
            )
            if not moved:
                break
        early = fetch(
            f"SELECT count(*) FROM {staged} WHERE run_id = %s AND kind = %s AND sort_at <> created_at", [self.run.pk, C]
        )[0][0]
        if early:
            self.summary.note("reply dated before the comment it answers: placed right after it", count=early)
        return fetch(f"SELECT count(*) FROM {staged} WHERE run_id = %s AND kind = %s", [self.run.pk, C])[0][0]

    # --- 4. comments, in time order, a batch at a time -------------------------------------

    def insert_comments(self, total: int) -> None:
        """Batches in time order. With render workers, the next batch's bodies are converted
        and rendered in those processes while this one is stored."""
        pool = _render_pool(self.workers) if total >= COMMENT_BATCH else None
        try:
            waiting: list[_Staged] = []  # replies whose parent comes later (same time) or never
            done = 0
            self.progress("importing", 0, total)
            rows = self._next_staged(None)
            rendering = _render_start(pool, rows)
            while rows or waiting:
                following = self._next_staged((param_time(rows[-1].sort_at), rows[-1].seq)) if rows else []
                following_rendering = _render_start(pool, following)
                _render_finish(rows, rendering)
                batch = waiting + rows
                waiting = self._insert_batch(batch, last=not following)
                done += len(batch) - len(waiting)
                if done >= 2 * self.analyzed_at + COMMENT_BATCH:
                    self.analyze()
                    self.analyzed_at = done
                self.progress("importing", done, total)
                rows, rendering = following, following_rendering
        finally:
            if pool is not None:
                pool.terminate()

    def _next_staged(self, after: tuple | None) -> list[_Staged]:
        """The next batch of staged comments in time order, parents first."""
        keyset, params = ("AND (sort_at, seq) > (%s, %s) ", list(after)) if after else ("", [])
        rows = fetch(
            f"SELECT {_STAGED_READ} FROM {self.staged} WHERE run_id = %s AND kind = %s {keyset}"
            f"ORDER BY sort_at, seq LIMIT {COMMENT_BATCH}",
            [self.run.pk, ItemKind.COMMENT, *params],
        )
        out = []
        for r in rows:
            staged = _Staged(*r)
            staged.sort_at, staged.created_at, staged.edited_at = row_time(r[4]), row_time(r[5]), row_time(r[6])  # type: ignore[assignment]  # only edited_at is NULL
            staged.pinned, staged.featured = bool(r[9]), bool(r[10])
            out.append(staged)
        return out

    def _insert_batch(self, rows: list[_Staged], *, last: bool) -> list[_Staged]:
        """Insert what of ``rows`` can be placed; return the replies whose parent is not placed
        yet. On the last batch (``last``) a reply whose parent never comes (a cycle of replies,
        or a parent removed since it was imported) goes to the top level."""
        nodes, waiting = self._order(rows)
        while last and waiting and not nodes:
            first, waiting = waiting[0], waiting[1:]
            self.summary.note("reply cycle or vanished parent: kept at the top level", f"comment {first.source_id}")
            first.parent_id = None
            nodes, waiting = self._order([first, *waiting])
        if not nodes:
            return waiting
        self._prepare(nodes)
        for attempt in range(3):
            try:
                self._assign_ids(nodes)
                self._store(nodes)
                break
            except IntegrityError:
                # An id taken by another writer between the probe and the insert: probe again.
                if attempt == 2:
                    raise
        for node in nodes:
            self.summary.comments[node.status] += 1
        self._open_review_tasks([n.id for n in nodes if n.status == Status.PENDING])
        return waiting

    def _order(self, rows: list[_Staged]) -> tuple[list[_Node], list[_Staged]]:
        """The rows that can be placed, parents first (in the rows' order otherwise), and those
        whose parent is neither stored nor among them."""
        subjects = self._subject_ids({r.thread_id for r in rows})
        here = {r.source_id for r in rows}
        stored = self._stored_parents({r.parent_id for r in rows if r.parent_id and r.parent_id not in here})
        placed: dict[str, _Placed] = {}
        nodes: list[_Node] = []
        remaining = rows
        while remaining:
            later = []
            for row in remaining:
                parent = None
                if row.parent_id is not None:
                    parent = placed.get(row.parent_id) or stored.get(row.parent_id)
                    if parent is None:
                        later.append(row)
                        continue
                node = _Node(row=row, subject_id=subjects[row.thread_id], parent=parent)
                nodes.append(node)
                placed[row.source_id] = _Placed(0, node.subject_id, "", 0, None, node)
            if len(later) == len(remaining):
                return nodes, later
            remaining = later
        return nodes, []

    def _subject_ids(self, thread_ids: set[str]) -> dict[str, int]:
        found = {t: self.subjects[t] for t in thread_ids if t in self.subjects}
        missing = [t for t in thread_ids if t not in found]
        if missing:
            found.update(
                ImportedItem.objects.filter(
                    site=self.site, source=self.source, kind=ItemKind.THREAD, source_id__in=missing
                ).values_list("source_id", "target_id")
            )
            for source_id in missing:
                self._remember(self.subjects, source_id, found[source_id])
        return found

    def _stored_parents(self, parent_ids: set[str]) -> dict[str, _Placed]:
        if not parent_ids:
            return {}
        found: dict[str, _Placed] = {}
        for condition, params in among("m.source_id", sorted(parent_ids)):
            rows = fetch(
                f"SELECT m.source_id, c.id, c.subject_id, c.path, c.depth, c.root_id FROM {self.items} m "
                f"JOIN {table(Comment)} c ON c.id = m.target_id WHERE m.site_id = %s AND m.source = %s AND m.kind = %s "
                f"AND {condition}",
                [self.site.pk, self.source, ItemKind.COMMENT, *params],
            )
            found.update(
                (source_id, _Placed(pk, subject_id, path, depth, root_id))
                for source_id, pk, subject_id, path, depth, root_id in rows
            )
        return found

    def _prepare(self, nodes: list[_Node]) -> None:
        """Everything of the batch but ids, paths and floors: authors, statuses, bodies."""
        authors = self._author_ids([n.row for n in nodes])
        for node in nodes:
            row = node.row
            node.author_id = authors.get(row.author_id)
            node.status = row.status
            node.body, node.html = row.rendered  # type: ignore[misc]  # rendered by now
            if not node.body and node.status not in GONE_STATUSES:
                node.status = Status.DELETED
                self.summary.note("empty body: kept as a deleted placeholder", f"comment {row.source_id}")
            if self.keep_ip_since is not None and row.created_at < self.keep_ip_since:
                row.ip, row.user_agent = None, ""  # older than the retention period: never stored
            node.counted = is_counted(node.status, row.visibility)

    def _author_ids(self, rows: list[_Staged]) -> dict[str, int]:
        """The user of each author (external id), created with its identity on first sight."""
        wanted: dict[str, _Staged] = {}
        for row in rows:  # an author as their first comment of the batch names them
            if row.author_id:
                wanted.setdefault(row.author_id, row)
        found = {eid: self.users[eid] for eid in wanted if eid in self.users}
        missing = {eid: r for eid, r in wanted.items() if eid not in found}
        if missing:
            found.update(
                ExternalIdentity.objects.filter(site=self.site, external_id__in=list(missing)).values_list(
                    "external_id", "user_id"
                )
            )
            new = {eid: r for eid, r in missing.items() if eid not in found}
            if new:
                found.update(self._create_authors(new))
            for external_id in missing:
                self._remember(self.users, external_id, found[external_id])
        return found

    def _create_authors(self, authors: dict[str, _Staged]) -> dict[str, int]:
        """Users for authors new to the site: like the local twin of an SSO user (no usable
        password; an ``ExternalIdentity`` says who they are), so a later sign-in by the host
        with the same id is the same user."""
        usernames = {eid: _username(self.site, eid) for eid in authors}
        unusable = make_password(None)
        User.objects.bulk_create(
            [
                User(
                    username=usernames[eid],
                    display_name=clean_display_name(r.author_name),  # the readers' fallbacks done, kept as every name
                    avatar_url=r.author_avatar[:1000],
                    password=unusable,
                )
                for eid, r in authors.items()
            ],
            ignore_conflicts=True,  # left by a run that failed before it wrote the identity
        )
        user_ids = dict(User.objects.filter(username__in=list(usernames.values())).values_list("username", "pk"))
        self.summary.users_created += len(authors)
        ExternalIdentity.objects.bulk_create(
            [
                ExternalIdentity(
                    site=self.site, external_id=eid, user_id=user_ids[usernames[eid]], email=r.author_email[:254]
                )
                for eid, r in authors.items()
            ],
            ignore_conflicts=True,  # an SSO sign-in made it meanwhile: its user is read back below
        )
        return dict(
            ExternalIdentity.objects.filter(site=self.site, external_id__in=list(authors)).values_list(
                "external_id", "user_id"
            )
        )

    def _assign_ids(self, nodes: list[_Node]) -> None:
        """Ids in insertion order, each the first free one at or after its date's
        (``portability.ids``); then paths, depths and roots, which are made of ids."""
        taken: set[int] = set()
        probed: set[int] = set()
        while True:
            last = self.last_id
            for node in nodes:
                candidate = max(history_id(node.row.sort_at), last + 1)
                while candidate in taken:
                    candidate += 1
                node.id = last = candidate
            fresh = [n.id for n in nodes if n.id not in probed]
            if not fresh:
                break
            probed.update(fresh)
            clashes: set[int] = set()
            for condition, params in among("id", fresh):
                clashes.update(pk for (pk,) in fetch(f"SELECT id FROM {table(Comment)} WHERE {condition}", params))
            if not clashes:
                break
            taken |= clashes
        self.last_id = nodes[-1].id
        for node in nodes:
            parent = node.parent
            if parent is not None and parent.node is not None:
                batch_parent = parent.node
                parent = _Placed(
                    batch_parent.id,
                    batch_parent.subject_id,
                    batch_parent.path,
                    batch_parent.depth,
                    batch_parent.root_id,
                    batch_parent,
                )
                node.parent = parent
            if parent is not None and parent.subject_id != node.subject_id:
                self.summary.note(
                    "reply to a comment of another thread: kept at the top level", f"comment {node.row.source_id}"
                )
                node.parent = parent = None
            if parent is None:
                node.path, node.depth, node.root_id = paths.encode_step(node.id), 0, None
            else:
                node.root_id = parent.root_id or parent.id
                if parent.depth >= settings.COMMENTS_MAX_DEPTH:
                    # As comment_create does: at the depth cap a reply is its target's sibling.
                    node.path, node.depth = paths.child_path(paths.parent_path(parent.path), node.id), parent.depth
                else:
                    node.path, node.depth = paths.child_path(parent.path, node.id), parent.depth + 1

    def _store(self, nodes: list[_Node]) -> None:
        """Floors, counters, rows and source ids of the batch, in one transaction (the subject
        rows locked first, then comment rows: the core's lock order)."""
        in_batch = {n.id: n for n in nodes}
        for node in nodes:  # again from nothing when a batch is retried
            node.reply_count = node.descendant_count = node.reply_floor_seq = 0
        subject_deltas: dict[int, list[int]] = defaultdict(lambda: [0, 0])  # comments, top-level
        comment_deltas: dict[int, list[int]] = defaultdict(lambda: [0, 0])  # descendants, replies
        for node in nodes:
            node.pinned = node.row.pinned and node.depth == 0 and node.status == Status.PUBLISHED
            node.featured = node.row.featured and node.status == Status.PUBLISHED
            if not node.counted:
                continue
            subject_deltas[node.subject_id][0] += 1
            if node.depth == 0:
                subject_deltas[node.subject_id][1] += 1
                continue
            # What _apply_count_delta does for one new comment: every ancestor in the tree
            # counts it as a descendant; the top-level comment and the one it answers as a reply.
            assert node.root_id is not None and node.parent is not None  # a reply
            for ancestor in paths.split_path(node.path)[:-1]:
                target = in_batch.get(ancestor)
                if target is not None:
                    target.descendant_count += 1
                else:
                    comment_deltas[ancestor][0] += 1
            for answered in {node.root_id, node.parent.id}:
                target = in_batch.get(answered)
                if target is not None:
                    target.reply_count += 1
                else:
                    comment_deltas[answered][1] += 1
        subject_ids = sorted({n.subject_id for n in nodes})
        outer_roots = sorted({n.root_id for n in nodes if n.root_id is not None and n.root_id not in in_batch})
        with transaction.atomic():
            floors = dict(
                Subject.objects.select_for_update()
                .filter(pk__in=subject_ids)
                .order_by("pk")
                .values_list("pk", "floor_seq")
            )
            root_floors = dict(
                Comment.objects.select_for_update()
                .filter(pk__in=outer_roots)
                .order_by("pk")
                .values_list("pk", "reply_floor_seq")
            )
            pinned = self._check_pins(nodes)
            for node in nodes:
                if node.depth == 0:
                    floors[node.subject_id] += 1
                    node.floor = floors[node.subject_id]
                elif node.root_id in in_batch:
                    root = in_batch[node.root_id]
                    root.reply_floor_seq += 1
                    node.floor = root.reply_floor_seq
                else:
                    root_floors[node.root_id] += 1  # type: ignore[index]  # a reply: it has a root
                    node.floor = root_floors[node.root_id]  # type: ignore[index]
            self._insert_rows(nodes)
            subject_table = table(Subject)
            subject_rows = [(pk, floors[pk], *subject_deltas[pk]) for pk in subject_ids]
            for source, params in sources(
                [("id", "bigint"), ("f", "integer"), ("c", "integer"), ("r", "integer")], subject_rows
            ):
                execute(
                    f"UPDATE {subject_table} SET floor_seq = x.f, comment_count = {subject_table}.comment_count + x.c, "
                    f"root_count = {subject_table}.root_count + x.r FROM {source} WHERE {subject_table}.id = x.id",
                    params,
                )
            comment_table = table(Comment)
            outer = sorted(set(comment_deltas) | set(root_floors))
            comment_rows = [(pk, root_floors.get(pk, -1), *comment_deltas.get(pk, (0, 0))) for pk in outer]
            for source, params in sources(
                [("id", "bigint"), ("f", "integer"), ("d", "integer"), ("r", "integer")], comment_rows
            ):
                execute(
                    f"UPDATE {comment_table} SET reply_floor_seq = CASE WHEN x.f >= 0 THEN x.f ELSE {comment_table}.reply_floor_seq END, "
                    f"descendant_count = {comment_table}.descendant_count + x.d, reply_count = {comment_table}.reply_count + x.r "
                    f"FROM {source} WHERE {comment_table}.id = x.id",
                    params,
                )
            insert_rows(
                ImportedItem,
                ("site_id", "source", "kind", "source_id", "target_id"),
                [(self.site.pk, self.source, ItemKind.COMMENT, n.row.source_id, n.id) for n in nodes],
            )
            pages_change_many(subject_ids)
        self.pinned = pinned

    def _check_pins(self, nodes: list[_Node]) -> dict[int, int]:
        """At most ``COMMENTS_PINNED_LIMIT`` pinned comments per subject (the oldest stay);
        the pinned counts once the batch is in."""
        pinned = dict(self.pinned)
        unknown = {n.subject_id for n in nodes if n.pinned and n.subject_id not in pinned}
        if unknown:
            counts = Counter(
                Comment.objects.filter(subject_id__in=unknown, depth=0, pinned=True).values_list(
                    "subject_id", flat=True
                )
            )
            pinned.update({subject_id: counts.get(subject_id, 0) for subject_id in unknown})
        for node in nodes:
            if node.pinned:
                if pinned[node.subject_id] >= settings.COMMENTS_PINNED_LIMIT:
                    node.pinned = False
                    self.summary.note(
                        "pinned beyond the limit of pinned comments: not pinned", f"comment {node.row.source_id}"
                    )
                else:
                    pinned[node.subject_id] += 1
        return pinned

    def _insert_rows(self, nodes: list[_Node]) -> None:
        insert_rows(
            Comment,
            (
                "id",
                "subject_id",
                "author_id",
                "reply_to_id",
                "root_id",
                "path",
                "depth",
                "floor",
                "status",
                "visibility",
                "pinned",
                "featured",
                "like_count",
                "reply_count",
                "descendant_count",
                "reply_floor_seq",
                "created_at",
                "edited_at",
            ),
            [
                (
                    n.id,
                    n.subject_id,
                    n.author_id,
                    n.parent.id if n.parent else None,
                    n.root_id,
                    n.path,
                    n.depth,
                    n.floor,
                    n.status,
                    n.row.visibility,
                    n.pinned,
                    n.featured,
                    0,
                    n.reply_count,
                    n.descendant_count,
                    n.reply_floor_seq,
                    n.row.created_at,
                    n.row.edited_at,
                )
                for n in nodes
            ],
        )
        insert_rows(
            CommentContent,
            ("comment_id", "subject_id", "body", "html", "mentions", "author_ip", "user_agent"),
            [(n.id, n.subject_id, n.body, n.html, [], n.row.ip, n.row.user_agent) for n in nodes],
        )

    def _open_review_tasks(self, comment_ids: list[int]) -> None:
        """Imported comments waiting for a decision join the review queue."""
        if comment_ids:
            from moderation.services import review_task_open

            for comment_id in comment_ids:
                review_task_open(comment_id=comment_id, reasons=[f"import:{self.source}"])


def _render_pool(workers: int):
    """Processes that convert and render bodies (the import's biggest cost), forked from this
    one, which has everything loaded; they touch no database. None for one worker."""
    if workers <= 1:
        return None
    import multiprocessing

    return multiprocessing.get_context("fork").Pool(workers)


def _render_start(pool, rows: list[_Staged]):
    if pool is None or not rows:
        return None
    return pool.map_async(_render, [(r.body, r.markup) for r in rows], chunksize=100)


def _render_finish(rows: list[_Staged], rendering) -> None:
    results = rendering.get() if rendering is not None else map(_render, ((r.body, r.markup) for r in rows))
    for row, rendered in zip(rows, results, strict=True):
        row.rendered = rendered
        row.body = ""  # the source's text is no longer needed


def _username(site: Site, external_id: str) -> str:
    digest = hashlib.sha256(f"{site.pk}:{external_id}".encode()).hexdigest()[:20]
    return f"imp-{site.key[:40]}-{digest}"


def _audit(*, site_id: int | None, actor: User | None, action: str, reason: str) -> None:
    from moderation.services import audit_write

    audit_write(site_id=site_id, actor=actor, action=action, reason=reason)


# --- exports (read in queries; the record of who took what is a write) -------------------------


def site_export(*, site: Site, format: str, out, actor: User | None = None) -> dict:
    """Write the site's export (``format`` json or disqus) to the binary stream ``out``, and
    audit it; returns what it held."""
    from . import queries

    chunks = queries.site_export_json(site) if format == "json" else queries.site_export_disqus(site)
    for chunk in chunks:
        out.write(chunk)
    written = {
        "subjects": Subject.objects.filter(site=site).count(),
        "comments": Comment.objects.filter(subject__site=site).count(),
    }
    _audit(
        site_id=site.pk,
        actor=actor,
        action="data_export",
        reason=f"{format}: {written['subjects']} subjects, {written['comments']} comments",
    )
    return written


@replicas.primary_reads()  # asked in a GET, where reads may go to a replica: the audit must be exact
def user_data_exported(*, user: User, actor: User | None) -> None:
    """Audit that ``user``'s data was handed out (by themself or by staff): one entry on every
    site they have data on."""
    reason = f"user {user.pk}" + ("" if actor is not None and actor.pk == user.pk else " (by staff)")
    for site_id in _sites_of(user) or [None]:  # type: ignore[list-item]  # None: the global audit
        _audit(site_id=site_id, actor=actor, action="user_data_export", reason=reason)


def _sites_of(user: User) -> list[int]:
    """The sites where ``user`` has comments, likes, reports, sanctions or an identity."""
    from likes.models import Like
    from moderation.models import Report, Sanction

    sites = set(Comment.objects.filter(author=user).values_list("subject__site_id", flat=True).distinct())
    sites |= set(
        Subject.objects.filter(pk__in=Like.objects.filter(user=user).values("subject_id")).values_list(
            "site_id", flat=True
        )
    )
    sites |= set(
        Subject.objects.filter(pk__in=Report.objects.filter(user=user).values("subject_id")).values_list(
            "site_id", flat=True
        )
    )
    sites |= set(Sanction.objects.filter(user=user).values_list("site_id", flat=True))
    sites |= set(ExternalIdentity.objects.filter(user=user).values_list("site_id", flat=True))
    return sorted(sites)


# --- erasure ---------------------------------------------------------------------------------


@dataclass
class ErasureReport:
    user_id: int
    comments_kept_as_placeholders: int = 0
    comments_removed: int = 0
    likes_removed: int = 0
    reports_removed: int = 0
    follows_removed: int = 0
    identities_removed: int = 0
    tokens_removed: int = 0
    sites: list = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__.items())


def erasure_mode(site_id: int) -> str:
    mode = SitePrivacy.objects.filter(site_id=site_id).values_list("erasure", flat=True).first()
    return mode or settings.PORTABILITY_ERASURE_DEFAULT


def user_erase(*, user: User, actor: User | None) -> ErasureReport:
    """Erase ``user``'s data: the account is closed and stripped of everything that names the
    person; their comments become deleted placeholders with no text, no author, no IP address
    and no user agent, or are removed where the site says so and nothing hangs under them
    (``SitePrivacy``); their likes are withdrawn through the likes app's writer (counts, hot
    order and the Redis like state follow); their reports, follows, identities and tokens go.
    Sanctions stay (a moderator's record, about an account that no longer names anyone).
    Audited on every site the user had data on.

    Not one transaction (a big history would hold its subjects' locks for long): each step
    is idempotent, and erasing again finishes an erasure that was interrupted."""
    report = ErasureReport(user_id=user.pk, sites=_sites_of(user))
    from comments.models import ApiToken, Follow

    # First, so that nothing new arrives while the rest is erased.
    User.objects.filter(pk=user.pk).update(is_active=False)
    report.tokens_removed = ApiToken.objects.filter(user=user).delete()[0]
    report.likes_removed = _likes_withdraw(user)
    placeholders, removed = _comments_erase(user, actor)
    report.comments_kept_as_placeholders, report.comments_removed = placeholders, removed
    from moderation.models import Report

    report.reports_removed = Report.objects.filter(user=user).delete()[0]
    report.follows_removed = (
        Follow.objects.filter(follower=user).delete()[0] + Follow.objects.filter(followee=user).delete()[0]
    )
    identities_removed = ExternalIdentity.objects.filter(user=user).delete()[0]
    answers: Sequence[tuple[object, object]] = hooks.user_erasing.send(sender=User, user_id=user.pk)
    report.identities_removed = identities_removed + sum(removed for _, removed in answers if isinstance(removed, int))
    user.moderated_sites.clear()
    User.objects.filter(pk=user.pk).update(
        username=f"erased-{user.pk}",
        first_name="",
        last_name="",
        email="",
        display_name="",
        avatar_url="",
        password=make_password(None),
        is_active=False,
        is_staff=False,
        is_superuser=False,
    )
    summary = (
        f"user {user.pk}: {placeholders} comments kept as placeholders, {removed} removed, {report.likes_removed} likes, "
        f"{report.reports_removed} reports, {report.identities_removed} identities"
    )
    for site_id in report.sites or [None]:
        _audit(site_id=site_id, actor=actor, action="user_erase", reason=summary)
    user.refresh_from_db()
    return report


def _likes_withdraw(user: User) -> int:
    """Unlike everything ``user`` likes, through ``likes.services.like_actions_apply`` (the one
    writer of like rows and counts), with an action newer than any the user took: the likes in
    the rows, and those still waiting in Redis streams for the flush (which the flush will
    then find older than the withdrawal, and drop). Redis's state of each comment is dropped
    at once, and is rebuilt from the rows on next use; the comments are also marked stale, so
    the next flush drops them again should a reader have rebuilt one from rows read before the
    withdrawal."""
    from likes import keys, live, state_sync
    from likes.models import Like
    from likes.services import LikeAction, like_actions_apply

    rows = {
        c: (active, version)
        for c, active, version in Like.objects.filter(user=user).values_list("comment_id", "active", "version")
    }
    liked = {c for c, (active, _) in rows.items() if active}
    touched = set(liked)
    r = state_sync.client()
    if r is not None:
        try:
            for subject_id, _ in live.dirty_subjects(r):
                for entry_id, fields in live.stream_entries(r, keys.events(subject_id)):
                    action = live.parse_action(fields)
                    if action is None or action[1] != user.pk:
                        continue
                    comment_id, liked_now = action[0], action[2]
                    touched.add(comment_id)
                    if live.entry_version(entry_id) > rows.get(comment_id, (False, 0))[1]:
                        (liked.add if liked_now else liked.discard)(comment_id)
        except live.ERRORS as exc:
            live.mark_down(exc)
            r = None
    if not touched:
        return 0
    now_ms = live.now_ms()
    like_actions_apply(
        [LikeAction(comment_id=c, user_id=user.pk, liked=False, at_ms=now_ms) for c in sorted(touched)],
        mark_stale=bool(settings.LIKES_REDIS_URL),
    )
    if r is not None:
        places = dict(Comment.objects.filter(pk__in=touched).values_list("pk", "subject_id"))
        try:
            live.drop(r, list(places.items()))
        except live.ERRORS as exc:
            live.mark_down(exc)
    return len(liked)


def _comments_erase(user: User, actor: User | None) -> tuple[int, int]:
    """``(kept as placeholders, removed)``. Every comment goes through the core's one status
    transition (counters, the like state's flag and cached pages follow), then loses its text,
    author, IP address and user agent."""
    from comments.services import comment_set_status

    kept = 0
    removable: list[int] = []
    modes: dict[int, str] = {}
    after = 0
    while True:
        page = list(
            Comment.objects.filter(author=user, pk__gt=after)
            .order_by("pk")
            .values_list("pk", "status", "subject__site_id")[:1000]
        )
        if not page:
            break
        after = page[-1][0]
        for pk, status, _ in page:
            if status not in GONE_STATUSES:
                comment_set_status(comment_id=pk, to_status=Status.DELETED, actor=actor)
        ids = [pk for pk, _, _ in page]
        CommentContent.objects.filter(pk__in=ids).update(body="", html="", mentions=[], author_ip=None, user_agent="")
        Comment.objects.filter(pk__in=ids).update(author=None)
        for pk, _, site_id in page:
            if site_id not in modes:
                modes[site_id] = erasure_mode(site_id)
            if modes[site_id] == ErasureMode.REMOVE:
                removable.append(pk)
        kept += len(ids)
    removed = _remove_leaves(removable)
    return kept - removed, removed


def _remove_leaves(comment_ids: list[int]) -> int:
    """Delete those of ``comment_ids`` (deleted, uncounted) that nothing hangs under: no
    comment below them in the tree, and none answering them (at the depth cap a reply is its
    target's sibling, and would go with it). Removing one can free its parent: repeated until
    none is left to remove."""
    from likes import live, state_sync

    removed = 0
    comment_table = table(Comment)
    while comment_ids:
        marks = ", ".join(["%s"] * len(comment_ids))
        leaves = [
            (pk, subject_id)
            for pk, subject_id in fetch(
                f"SELECT c.id, c.subject_id FROM {comment_table} c WHERE c.id IN ({marks}) "
                f"AND NOT EXISTS (SELECT 1 FROM {comment_table} d WHERE d.subject_id = c.subject_id AND d.path > c.path "
                f"AND d.path < c.path || %s) AND NOT EXISTS (SELECT 1 FROM {comment_table} r WHERE r.reply_to_id = c.id)",
                [*comment_ids, paths.SUBTREE_END],
            )
        ]
        if not leaves:
            break
        Comment.objects.filter(pk__in=[pk for pk, _ in leaves]).delete()  # content, likes, reports go with them
        r = state_sync.client()
        if r is not None:
            try:
                live.drop(r, leaves)
            except live.ERRORS as exc:
                live.mark_down(exc)
        for subject_id in {s for _, s in leaves}:
            pages_change(subject_id)
        removed += len(leaves)
        gone = {pk for pk, _ in leaves}
        comment_ids = [pk for pk in comment_ids if pk not in gone]
    return removed


# --- retention -------------------------------------------------------------------------------


def ip_addresses_scrub(*, older_than_days: int | None = None) -> int:
    """Remove the IP address and user agent of every comment older than the retention period
    (``PORTABILITY_IP_RETENTION_DAYS``; 0 keeps them). Keyset pages over the primary key up to
    the first id of the cutoff (ids are time-ordered), each page one UPDATE; imported history,
    whose ids are packed before the service's first day, is checked by its date. Audited per
    site. Returns how many comments were scrubbed."""
    from comments.ids import id_floor_at

    days = settings.PORTABILITY_IP_RETENTION_DAYS if older_than_days is None else older_than_days
    if not days:
        return 0
    cutoff = timezone.now() - timedelta(days=days)
    below = id_floor_at(cutoff)
    comment_table, content_table = table(Comment), table(CommentContent)
    scrubbed: Counter = Counter()
    after = -1
    while True:
        rows = fetch(
            f"SELECT c.id, c.subject_id FROM {comment_table} c JOIN {content_table} cc ON cc.comment_id = c.id "
            f"WHERE c.id > %s AND c.id < %s AND c.created_at < %s AND (cc.author_ip IS NOT NULL OR cc.user_agent <> '') "
            f"ORDER BY c.id LIMIT {COMMENT_BATCH}",
            [after, below, param_time(cutoff)],
        )
        if not rows:
            break
        after = rows[-1][0]
        CommentContent.objects.filter(pk__in=[pk for pk, _ in rows]).update(author_ip=None, user_agent="")
        scrubbed.update(subject_id for _, subject_id in rows)
    by_site: Counter = Counter()
    for subject_id, site_id in Subject.objects.filter(pk__in=list(scrubbed)).values_list("pk", "site_id"):
        by_site[site_id] += scrubbed[subject_id]
    for site_id, count in sorted(by_site.items()):
        _audit(
            site_id=site_id,
            actor=None,
            action="ip_retention",
            reason=f"IP addresses and user agents of {count} comments older than {days} days removed",
        )
    return sum(scrubbed.values())
