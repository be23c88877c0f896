"""The audit entry of each of the app's writes, in moderation's audit log."""

from __future__ import annotations

from comments.models import User


def audit(*, site_id: int | None, actor: User | None, action: str, reason: str) -> None:
    from moderation.services import audit_write

    audit_write(site_id=site_id, actor=actor, action=action, reason=reason)
