"""The events webhooks hand on, as one line of JSON each (one stream entry or one task
argument): made when the change happened, with an id of its own. A retried task or a replayed
stream entry is the same event again, and its deliveries are keyed by ``(endpoint, event id)``;
the id is also the ``webhook-id`` the receiver sees, the same on every attempt."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass

from .models import EventType

_TYPES = set(EventType.values)


@dataclass(frozen=True)
class Event:
    id: str
    type: str
    target_id: int  # the comment, or for report.created the report
    at: float  # unix seconds, when it happened
    from_status: str = ""
    to_status: str = ""
    actor_id: int | None = None

    @classmethod
    def new(cls, type_: str, target_id: int, **fields) -> Event:
        return cls(f"evt_{uuid.uuid4().hex}", type_, int(target_id), time.time(), **fields)

    def text(self) -> str:
        return json.dumps(
            {
                "id": self.id,
                "type": self.type,
                "target": self.target_id,
                "at": self.at,
                "from": self.from_status,
                "to": self.to_status,
                "actor": self.actor_id,
            },
            separators=(",", ":"),
        )

    @classmethod
    def parse(cls, text: object) -> Event | None:
        """The event a line holds; None for anything else (never raises on a bad entry)."""
        try:
            d = json.loads(text) if isinstance(text, str) else None
            if not isinstance(d, dict) or d.get("type") not in _TYPES or not isinstance(d.get("id"), str):
                return None
            target, at, actor = d["target"], d["at"], d.get("actor")
            if not isinstance(target, int) or isinstance(target, bool) or not isinstance(at, (int, float)):
                return None
            if actor is not None and (not isinstance(actor, int) or isinstance(actor, bool)):
                return None
            return cls(
                d["id"][:64], d["type"], target, float(at), str(d.get("from") or ""), str(d.get("to") or ""), actor
            )
        except (ValueError, KeyError, TypeError):
            return None
