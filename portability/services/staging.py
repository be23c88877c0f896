"""An import's file, streamed into staged rows (``StagedRecord``), sifted, and read back in
time order a batch at a time: duplicates in the file, items imported before and comments of
unknown threads dropped; replies to comments absent from the file put at the top level; replies
dated before their parent placed right after it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from comments.models import Site

from .. import formats
from ..keys import ImportOptions
from ..models import ImportedItem, ImportRun, ItemKind, StagedRecord
from ..sql import analyze, execute, fetch, insert_rows, row_time, table
from .summary import EXAMPLES, ImportSummary, Progress

STAGE_BATCH = 5_000  # records parsed per insert into the staging table
COMMENT_BATCH = 2_000  # comments per insert transaction
FIX_UP_ROUNDS = 100  # passes placing replies dated before their parent (one chain level each)

STAGED_COLUMNS = (
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


def staged_row(
    run_id: int, seq: int, record: formats.Thread | formats.Comment, subject: tuple[list[str], str] = ([], "")
) -> tuple:
    """A record as staged; a thread with its ``subject``: its candidate keys and URL
    (``ImportOptions.subject_of``)."""
    if isinstance(record, formats.Thread):
        keys, url = subject
        return (
            run_id,
            seq,
            ItemKind.THREAD,
            record.source_id,
            "\n".join(k.replace("\n", " ") for k in keys),
            url,
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


@dataclass(slots=True)
class Staged:
    """A staged comment as the import reads it back."""

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
    rendered: tuple[str, str] | None = None  # (Markdown body, HTML), from imports' render step


STAGED_READ = (
    "seq, source_id, thread_id, parent_id, sort_at, created_at, edited_at, status, visibility, pinned, featured, "
    "author_id, author_name, author_email, author_avatar, body, markup, ip, user_agent"
)


class StagedRun:
    """The staged rows of one import run: written from the file, sifted, read back, deleted."""

    def __init__(
        self,
        *,
        site: Site,
        run: ImportRun,
        reader: formats.Reader,
        summary: ImportSummary,
        progress: Progress,
        options: ImportOptions,
    ):
        self.site, self.run, self.reader, self.summary, self.progress = site, run, reader, summary, progress
        self.options = options
        self.source = reader.name
        self.table = table(StagedRecord)
        self.items = table(ImportedItem)

    def clean_up(self) -> None:
        execute(f"DELETE FROM {self.table} WHERE run_id = %s", [self.run.pk])

    def stage(self) -> None:
        """The file, streamed into staged rows."""
        rows, seq = [], 0
        self.progress("reading", 0, None)
        for seq, record in enumerate(self.reader.records(), 1):
            if isinstance(record, formats.Skipped):
                self.summary.skip(record.reason, record.where)
            elif isinstance(record, formats.Thread):
                subject = self.options.subject_of(record, identifier_is_key=self.reader.identifier_is_key)
                rows.append(staged_row(self.run.pk, seq, record, subject))
            else:
                rows.append(staged_row(self.run.pk, seq, record))
                if len(rows) >= STAGE_BATCH:
                    insert_rows(StagedRecord, STAGED_COLUMNS, rows)
                    rows.clear()
            if seq % STAGE_BATCH == 0:
                self.progress("reading", seq, None)
        insert_rows(StagedRecord, STAGED_COLUMNS, rows)
        # Fresh statistics: with none, the planner takes the staged rows for a handful and
        # answers every per-row lookup below with a scan of them all.
        analyze(StagedRecord)
        self.summary.records = seq
        self.progress("reading", seq, seq)

    def drop(self, kind: str, condition: str, params: list, reason: str, *, note: bool = False) -> int:
        """Delete the run's staged rows of ``kind`` meeting ``condition`` (over the staged table,
        named in full), counted under ``reason`` with examples."""
        where = f"run_id = %s AND kind = %s AND {condition}"
        examples = fetch(
            f"SELECT source_id FROM {self.table} WHERE {where} ORDER BY seq LIMIT {EXAMPLES}",
            [self.run.pk, kind, *params],
        )
        if not examples:
            return 0
        count = execute(f"DELETE FROM {self.table} WHERE {where}", [self.run.pk, kind, *params])
        label = "thread" if kind == ItemKind.THREAD else "comment"
        (self.summary.note if note else self.summary.skip)(reason, [f"{label} {e[0]}" for e in examples], count)
        return count

    def duplicates(self, kind: str) -> str:
        return (
            f"EXISTS (SELECT 1 FROM {self.table} b WHERE b.run_id = {self.table}.run_id AND b.kind = {self.table}.kind "
            f"AND b.source_id = {self.table}.source_id AND b.seq < {self.table}.seq)"
        )

    def imported(self, kind: str, column: str) -> tuple[str, list]:
        return (
            f"EXISTS (SELECT 1 FROM {self.items} m WHERE m.site_id = %s AND m.source = %s AND m.kind = %s "
            f"AND m.source_id = {self.table}.{column})",
            [self.site.pk, self.source, kind],
        )

    def sift_comments(self) -> int:
        """Drop duplicates, comments imported before and comments of unknown threads; put
        replies to comments absent from the file at the top level; place replies dated before
        their parent right after it. Returns how many comments are left to insert."""
        C, staged = ItemKind.COMMENT, self.table
        self.drop(C, self.duplicates(C), [], "duplicate comment id in the file (first kept)")
        condition, params = self.imported(ItemKind.THREAD, "thread_id")
        self.drop(C, f"NOT {condition}", params, "thread not in the file")
        condition, params = self.imported(C, "source_id")
        known = execute(
            f"DELETE FROM {staged} WHERE run_id = %s AND kind = %s AND {condition}", [self.run.pk, C, *params]
        )
        if known:
            self.summary.skip("already imported", count=known)
        imported_parent, params = self.imported(C, "parent_id")
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

    def next_comments(self, after: tuple | None) -> list[Staged]:
        """The next batch of staged comments in time order, parents first."""
        keyset, params = ("AND (sort_at, seq) > (%s, %s) ", list(after)) if after else ("", [])
        rows = fetch(
            f"SELECT {STAGED_READ} FROM {self.table} WHERE run_id = %s AND kind = %s {keyset}"
            f"ORDER BY sort_at, seq LIMIT {COMMENT_BATCH}",
            [self.run.pk, ItemKind.COMMENT, *params],
        )
        out = []
        for r in rows:
            staged = Staged(*r)
            staged.sort_at, staged.created_at, staged.edited_at = row_time(r[4]), row_time(r[5]), row_time(r[6])  # type: ignore[assignment]  # only edited_at is NULL
            staged.pinned, staged.featured = bool(r[9]), bool(r[10])
            out.append(staged)
        return out
