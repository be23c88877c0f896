"""An import (``import_file``) reads the file once, streaming, into staged rows
(``staging``); settles subjects (``threads``: a thread becomes the subject with its key or URL,
found or created); drops what cannot or need not be imported (duplicates in the file, items
imported before, comments of unknown threads); then stores the comments in time order, parents
first, a batch at a time: ids from the original dates (``portability.ids``), places in the tree
as ``comment_create`` gives them (``comments.services.comment_place``), authors as users of the
site (``authors``: an ``ExternalIdentity`` each), bodies through the product's renderer
(``portability.markup``); floors, counters, pins and rows by the core's one writer of new
comments (``comments.services.comments_store``, which may write into closed subjects for an
import); and the source id of everything in ``ImportedItem``, which makes a second import of the
same file change nothing. Memory holds one batch, whatever the size of the file.

Imported comments skip the content checks of new posts (the word filter, pre-moderation): they
are history, already moderated where they were written; their statuses come from the source.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from comments.models import GONE_STATUSES, Comment, CommentContent, ExternalIdentity, Site, Status, User, is_counted
from comments.rendering import render_markdown
from comments.services import NewComment, comment_place, comments_store

from .. import formats
from ..ids import history_id
from ..keys import ImportOptions
from ..markup import to_markdown
from ..models import ImportedItem, ImportRun, ItemKind, RunState
from ..sql import among, analyze, fetch, insert_rows, param_time, table
from . import staging
from .audit import audit
from .authors import Authors
from .staging import Staged, StagedRun
from .summary import ImportBusy, ImportSummary, Progress, remember
from .threads import place_threads

if TYPE_CHECKING:
    from multiprocessing.pool import AsyncResult, Pool


def import_file(
    *,
    site: Site,
    format: str,
    path: str,
    actor: User | None = None,
    source_name: str = "",
    progress: Progress | None = None,
    workers: int = 1,
    options: ImportOptions | None = None,
) -> ImportSummary:
    """Import a file of ``format`` into ``site``; idempotent (see the module's docstring).
    ``options``: how threads become subjects (URL remaps, what keys are made from; kept on the
    run); threads imported before stay on their subjects whatever the options (the summary
    notes those the options would have keyed or addressed otherwise).
    Raises ``formats.FormatError`` (nothing imported) for a file that cannot be read as
    ``format``, ``ImportBusy`` while another import into the site runs. A run that fails
    midway keeps the batches it committed; running it again imports the rest. ``workers``:
    processes converting and rendering bodies (forked: for a command, not a web worker)."""
    reader = formats.reader_for(format, path)
    options = options or ImportOptions()
    with _site_import_lock(site):
        run = ImportRun.objects.create(
            site=site, format=format, source_name=source_name[:255], started_by=actor, options=options.as_dict()
        )
        job = _ImportJob(
            site=site,
            run=run,
            reader=reader,
            progress=progress or (lambda *args: None),
            workers=workers,
            options=options,
        )
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
    audit(
        site_id=site.pk,
        actor=actor,
        action="data_import",
        reason=f"{format} {source_name}{options.describe()}: " + "; ".join(job.summary.lines()[1:]),
    )
    return job.summary


class _site_import_lock:
    """One import at a time per site (a PostgreSQL advisory lock, held by the session; SQLite
    has one writer anyway)."""

    KEY = 1601  # the lock's namespace: issue 16, part 1

    def __init__(self, site: Site):
        self.site_id = site.pk

    def __enter__(self) -> None:
        if (
            connection.vendor == "postgresql"
            and not fetch("SELECT pg_try_advisory_lock(%s, %s)", [self.KEY, self.site_id])[0][0]
        ):
            raise ImportBusy("Another import into this site is running; try again when it has finished.")

    def __exit__(self, *exc: object) -> None:
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


def _render(body_and_markup: tuple[str, str]) -> tuple[str, str]:
    """An imported body as stored: Markdown and its HTML (run in the render pool's processes)."""
    body = to_markdown(*body_and_markup)
    return body, render_markdown(body) if body else ""


@dataclass(slots=True)
class _Node:
    """A comment of the batch being stored."""

    row: Staged
    subject_id: int
    parent: _Placed | None
    id: int = 0
    status: str = ""
    counted: bool = False
    author_id: int | None = None
    body: str = ""
    html: str = ""
    comment: Comment | None = None  # made once the batch's ids are known
    content: CommentContent | None = None


class _ImportJob:
    def __init__(
        self,
        *,
        site: Site,
        run: ImportRun,
        reader: formats.Reader,
        progress: Progress,
        workers: int = 1,
        options: ImportOptions,
    ):
        self.site, self.run, self.reader, self.progress = site, run, reader, progress
        self.workers = workers
        self.source = reader.name
        self.summary = ImportSummary(format=reader.name)
        self.started = time.monotonic()
        self.staged = StagedRun(
            site=site, run=run, reader=reader, summary=self.summary, progress=progress, options=options
        )
        self.authors = Authors(site, self.summary)
        self.subjects: dict[str, int] = {}  # thread source id -> subject id
        self.last_id = 0
        retention = settings.PORTABILITY_IP_RETENTION_DAYS
        self.keep_ip_since = timezone.now() - timedelta(days=retention) if retention else None
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
        self.staged.clean_up()

    # --- 1. the file, streamed into staged rows; 2. threads become subjects; 3. sifting --------

    def stage(self) -> None:
        self.staged.stage()

    def place_threads(self) -> None:
        place_threads(self.staged, self.subjects)

    def sift_comments(self) -> int:
        return self.staged.sift_comments()

    def analyze(self) -> None:
        """Fresh statistics of the tables the import grows, each time its comments have doubled
        (so a logarithmic number of times; each ANALYZE reads a sample of fixed size). Without
        them (autovacuum off, or behind a bulk load) the planner takes a table the import has
        filled for empty, and answers a batch's lookups of imported items and authors by their
        ids with a scan of everything of the site imported so far: a cost per batch growing
        with the import, quadratic in all (PostgreSQL only; SQLite's plans keep the indexes)."""
        for model in (ImportedItem, Comment, ExternalIdentity, User):
            analyze(model)

    # --- 4. comments, in time order, a batch at a time -------------------------------------

    def insert_comments(self, total: int) -> None:
        """Batches in time order. With render workers, the next batch's bodies are converted
        and rendered in those processes while this one is stored."""
        pool = _render_pool(self.workers) if total >= staging.COMMENT_BATCH else None
        try:
            waiting: list[Staged] = []  # replies whose parent comes later (same time) or never
            done = 0
            self.progress("importing", 0, total)
            rows = self.staged.next_comments(None)
            rendering = _render_start(pool, rows)
            while rows or waiting:
                following = self.staged.next_comments((param_time(rows[-1].sort_at), rows[-1].seq)) if rows else []
                following_rendering = _render_start(pool, following)
                _render_finish(rows, rendering)
                batch = waiting + rows
                waiting = self._insert_batch(batch, last=not following)
                done += len(batch) - len(waiting)
                if done >= 2 * self.analyzed_at + staging.COMMENT_BATCH:
                    self.analyze()
                    self.analyzed_at = done
                self.progress("importing", done, total)
                rows, rendering = following, following_rendering
        finally:
            if pool is not None:
                pool.terminate()

    def _insert_batch(self, rows: list[Staged], *, last: bool) -> list[Staged]:
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

    def _order(self, rows: list[Staged]) -> tuple[list[_Node], list[Staged]]:
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
                remember(self.subjects, source_id, found[source_id])
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
        authors = self.authors.ids([n.row for n in nodes])
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

    def _assign_ids(self, nodes: list[_Node]) -> None:
        """Ids in insertion order, each the first free one at or after its date's
        (``portability.ids``); then each comment's rows, placed in the tree (paths are made of
        ids)."""
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
            row = node.row
            parent: _Placed | Comment | None = node.parent
            if node.parent is not None and node.parent.node is not None:
                parent = node.parent.node.comment  # placed before it: parents come first
            if parent is not None and parent.subject_id != node.subject_id:
                self.summary.note(
                    "reply to a comment of another thread: kept at the top level", f"comment {row.source_id}"
                )
                parent = None
            comment = node.comment = Comment(
                id=node.id,
                subject_id=node.subject_id,
                author_id=node.author_id,
                floor=0,
                status=node.status,
                visibility=row.visibility,
                created_at=row.created_at,
                edited_at=row.edited_at,
            )
            comment_place(comment, parent)  # as comment_create places a reply
            node.content = CommentContent(
                comment=comment,
                subject_id=node.subject_id,
                body=node.body,
                html=node.html,
                mentions=[],
                author_ip=row.ip,
                user_agent=row.user_agent,
            )

    def _store(self, nodes: list[_Node]) -> None:
        """The batch's comments by the core's writer (floors, counters, pins, rows) and their
        source ids, in one transaction; pins over the subject's limit are noted once it
        committed."""
        new = [
            NewComment(n.comment, n.content, n.counted, pinned=n.row.pinned, featured=n.row.featured)  # type: ignore[arg-type]  # made by _assign_ids
            for n in nodes
        ]
        with transaction.atomic():
            stored = comments_store(new, closed_ok=True)  # an import may write into a closed subject
            insert_rows(
                ImportedItem,
                ("site_id", "source", "kind", "source_id", "target_id"),
                [(self.site.pk, self.source, ItemKind.COMMENT, n.row.source_id, n.id) for n in nodes],
            )
        source_ids = {n.id: n.row.source_id for n in nodes}
        for item in stored.unpinned:
            self.summary.note(
                "pinned beyond the limit of pinned comments: not pinned", f"comment {source_ids[item.comment.id]}"
            )

    def _open_review_tasks(self, comment_ids: list[int]) -> None:
        """Imported comments waiting for a decision join the review queue."""
        if comment_ids:
            from moderation.services import review_task_open

            for comment_id in comment_ids:
                review_task_open(comment_id=comment_id, reasons=[f"import:{self.source}"])


def _render_pool(workers: int) -> Pool | None:
    """Processes that convert and render bodies (the import's biggest cost), forked from this
    one, which has everything loaded; they touch no database. None for one worker."""
    if workers <= 1:
        return None
    import multiprocessing

    return multiprocessing.get_context("fork").Pool(workers)


def _render_start(pool: Pool | None, rows: list[Staged]) -> AsyncResult[list[tuple[str, str]]] | None:
    if pool is None or not rows:
        return None
    return pool.map_async(_render, [(r.body, r.markup) for r in rows], chunksize=100)


def _render_finish(rows: list[Staged], rendering: AsyncResult[list[tuple[str, str]]] | None) -> None:
    results = rendering.get() if rendering is not None else map(_render, ((r.body, r.markup) for r in rows))
    for row, rendered in zip(rows, results, strict=True):
        row.rendered = rendered
        row.body = ""  # the source's text is no longer needed
