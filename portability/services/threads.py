"""An import's threads become subjects: each the subject with its key or URL, found or created
(by ``comments.services.subjects_create``, with its key's row). A thread imported before stays on
its subject, whatever key and URL the options of this import give it: a key is how a live page
finds its discussion, so a re-import never moves one (the summary notes each thread the options
would have put elsewhere)."""

from __future__ import annotations

from datetime import datetime

from comments.models import Subject, SubjectState
from comments.services import subjects_create

from ..models import ImportedItem, ItemKind
from ..queries import subject_of_thread, subjects_found
from ..sql import execute, fetch, insert_rows, row_time
from .staging import StagedRun
from .summary import remember

THREAD_BATCH = 1_000


def place_threads(staged: StagedRun, subjects: dict[str, int]) -> None:
    """Each thread of the file becomes the subject with its key or URL, found or created (threads
    imported before are left as they are), remembered in ``subjects`` by its source id and in
    ``ImportedItem``."""
    T = ItemKind.THREAD
    if staged.reader.threads_explicit:
        staged.drop(T, staged.duplicates(T), [], "duplicate thread id in the file (first kept)")
    else:  # threads named by each comment: repeats are expected
        execute(
            f"DELETE FROM {staged.table} WHERE run_id = %s AND kind = %s AND {staged.duplicates(T)}", [staged.run.pk, T]
        )
    condition, params = staged.imported(T, "source_id")
    _note_known_elsewhere(staged, condition, params)
    staged.summary.subjects_known += execute(
        f"DELETE FROM {staged.table} WHERE run_id = %s AND kind = %s AND {condition}", [staged.run.pk, T, *params]
    )
    after = 0
    while True:
        rows = fetch(
            f"SELECT seq, source_id, keys, url, title, closed, mode, created_at FROM {staged.table} "
            f"WHERE run_id = %s AND kind = %s AND seq > %s ORDER BY seq LIMIT {THREAD_BATCH}",
            [staged.run.pk, T, after],
        )
        if not rows:
            return
        after = rows[-1][0]
        _subjects_for(staged, subjects, rows)


def _subjects_for(staged: StagedRun, subjects: dict[str, int], rows: list[tuple]) -> None:
    """Find or create the subject of each thread, and remember which it is."""
    threads = [
        (source_id, keys.split("\n"), url, title, closed, mode, row_time(created))
        for _, source_id, keys, url, title, closed, mode, created in rows
    ]
    by_key, by_url = subjects_found(
        site=staged.site, keys={k for t in threads for k in t[1]}, urls={t[2] for t in threads if t[2]}
    )
    new: dict[str, Subject] = {}
    dates: dict[str, datetime] = {}
    for _source_id, keys, url, title, closed, mode, created in threads:
        if not any(k in by_key for k in keys) and url not in by_url and keys[0] not in new:
            new[keys[0]] = Subject(
                site=staged.site,
                key=keys[0],
                title=title[:300],
                url=url[:2000],
                mode=mode or staged.site.default_mode,
                state=SubjectState.CLOSED if closed else SubjectState.OPEN,
            )
            if created is not None:
                dates[keys[0]] = created
    if new:
        # Subjects the API made meanwhile win (their keys' rows do); all are read back by key.
        made = subjects_create(staged.site, list(new.values()))
        created_ids = {key: pk for key, pk in made.items() if pk == new[key].pk}
        staged.summary.subjects_created += len(created_ids)
        by_key.update(made)
        _date_subjects({created_ids[k]: at for k, at in dates.items() if k in created_ids})
    taken: set[int | None] = set()
    mapping = []
    for source_id, keys, url, *_ in threads:
        subject_id = subject_of_thread(keys, url, by_key, by_url)
        if keys[0] not in new or subject_id in taken:
            staged.summary.subjects_matched += 1
        taken.add(subject_id)
        mapping.append((staged.site.pk, staged.source, ItemKind.THREAD, source_id, subject_id))
        remember(subjects, source_id, subject_id)
    insert_rows(ImportedItem, ("site_id", "source", "kind", "source_id", "target_id"), mapping)


def _note_known_elsewhere(staged: StagedRun, imported: str, params: list) -> None:
    """Note the threads imported before whose subject has another key, or another URL, than
    this import's options give them (options changed since: they are left where they are)."""
    after = 0
    while True:
        rows = fetch(
            f"SELECT seq, source_id, keys, url, (SELECT m.target_id FROM {staged.items} m WHERE m.site_id = %s "
            f"AND m.source = %s AND m.kind = %s AND m.source_id = {staged.table}.source_id) FROM {staged.table} "
            f"WHERE run_id = %s AND kind = %s AND seq > %s AND {imported} ORDER BY seq LIMIT {THREAD_BATCH}",
            [*params, staged.run.pk, ItemKind.THREAD, after, *params],
        )
        if not rows:
            return
        after = rows[-1][0]
        stored = {
            pk: (key, url)
            for pk, key, url in Subject.objects.filter(site=staged.site, pk__in={r[4] for r in rows}).values_list(
                "pk", "key", "url"
            )
        }
        for _, source_id, keys, url, subject_id in rows:
            if subject_id not in stored:
                continue  # its subject was removed since
            key, subject_url = stored[subject_id]
            wanted = keys.split("\n")[0]
            if key != wanted:
                staged.summary.keep(
                    "imported before under another key: left on its subject",
                    f"thread {source_id} on {key!r}, not {wanted!r}",
                )
            if url and subject_url != url:
                staged.summary.keep(
                    "imported before with another URL: left as it was",
                    f"thread {source_id} at {subject_url!r}, not {url!r}",
                )


def _date_subjects(dates: dict[int, datetime]) -> None:
    """A new subject is dated as its thread in the source (``created_at`` is set on insert)."""
    Subject.objects.bulk_update(
        [Subject(pk=pk, created_at=at) for pk, at in dates.items()], ["created_at"], batch_size=500
    )
