"""What every part of an import shares: its summary (what it did, for the command, the admin and
the run's record), its progress callback, the error of a site already importing, and the bounded
caches of what it met before."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

EXAMPLES = 5  # where-in-the-file examples kept per reason
CACHE_LIMIT = 100_000  # authors and threads remembered between batches (then forgotten)

Progress = Callable[[str, int, "int | None"], None]


class ImportBusy(Exception):
    """Another import into the same site is running."""


def remember(cache: dict, key: Hashable, value: object) -> None:
    """``cache[key] = value``, the cache emptied first once it holds ``CACHE_LIMIT`` entries."""
    if len(cache) >= CACHE_LIMIT:
        cache.clear()
    cache[key] = value


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
    kept: Counter = field(default_factory=Counter)  # threads imported before, left where this import would not put them
    examples: dict = field(default_factory=lambda: defaultdict(list))
    seconds: float = 0.0

    def skip(self, reason: str, where: str | Sequence[str] = (), count: int = 1) -> None:
        self.skipped[reason] += count
        self._example(reason, where)

    def note(self, reason: str, where: str | Sequence[str] = (), count: int = 1) -> None:
        self.notes[reason] += count
        self._example(reason, where)

    def keep(self, reason: str, where: str | Sequence[str] = (), count: int = 1) -> None:
        self.kept[reason] += count
        self._example(reason, where)

    def _example(self, reason: str, where: str | Sequence[str]) -> None:
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
            "kept": dict(self.kept),
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
        for title, counts in (
            ("skipped", self.skipped),
            ("imported with a change", self.notes),
            ("imported before, left as they are (other options now)", self.kept),
        ):
            if counts:
                out.append(f"{title}: {sum(counts.values()):,}")
                for reason, n in counts.most_common():
                    examples = self.examples.get(reason)
                    out.append(f"  {n:,} {reason}" + (f" (e.g. {', '.join(examples)})" if examples else ""))
        if not self.skipped:
            out.append("skipped: none")
        return out
