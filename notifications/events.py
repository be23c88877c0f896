"""The events the core and moderation report, as the notifications app hands them on: one line
of text each (``<id>|<type>|<fields...>``), so that one travels as one stream entry or one task
argument and is read back the same.

Every event carries an id of its own, made when it happened: a retried task or a replayed
stream entry is the same event again, and everything it causes is keyed by it (webhook
deliveries by ``(endpoint, event id)``, notifications by what the event is about)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

POSTED = "posted"  # comment_id
EDITED = "edited"  # comment_id
STATUS = "status"  # comment_id, from_status, to_status, actor_id ("" for the system)
REPORTED = "reported"  # report_id

_FIELDS = {POSTED: 1, EDITED: 1, STATUS: 4, REPORTED: 1}


@dataclass(frozen=True)
class Event:
    id: str
    type: str
    fields: tuple[str, ...]

    @classmethod
    def new(cls, type_: str, *fields) -> Event:
        return cls(uuid.uuid4().hex, type_, tuple("" if f is None else str(f) for f in fields))

    def text(self) -> str:
        return "|".join((self.id, self.type, *self.fields))

    @classmethod
    def parse(cls, text: object) -> Event | None:
        """The event a line holds; None for anything else (never raises on a bad entry)."""
        if not isinstance(text, str):
            return None
        event_id, _, rest = text.partition("|")
        type_, _, fields = rest.partition("|")
        parts = tuple(fields.split("|")) if fields else ()
        if not event_id or _FIELDS.get(type_) != len(parts):
            return None
        if not parts[0].isdigit() or (type_ == STATUS and parts[3] and not parts[3].isdigit()):
            return None
        return cls(event_id, type_, parts)

    @property
    def target_id(self) -> int:
        """The comment (or, for ``reported``, the report) the event is about."""
        return int(self.fields[0])

    @property
    def actor_id(self) -> int | None:
        return int(self.fields[3]) if self.type == STATUS and self.fields[3] else None
