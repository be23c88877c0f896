"""Idempotent writes (API.md, "Idempotent writes"): a client that sends a write with an
``Idempotency-Key`` and, not knowing whether it was stored (a timeout, a dropped connection),
sends it again with the same key gets the first answer back, and nothing is stored twice.

The answer is kept in PostgreSQL (``IdempotentRequest``), in the same transaction as the write
it answers: a write and its kept answer commit together or not at all, so there is no moment
when one exists without the other, and the key holds while Redis is down (the moment clients
retry most). Two requests with one key at once: both write, the second's kept answer collides
with the first's on the key's unique index, and its transaction, write and all, rolls back; it
answers with the first's. Keys are the user's own (unique per user), kept for
``COMMENTS_IDEMPOTENCY_TTL`` seconds; only answers of writes that were stored (2xx) are kept, so
a refused write (a blocked word, a closed subject) may be sent again as it was."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from .exceptions import CommentsError, InvalidInput
from .models import IdempotentRequest, User

HEADER = "Idempotency-Key"
_META = "HTTP_IDEMPOTENCY_KEY"
MAX_KEY = 255


class IdempotencyKeyReused(CommentsError):
    """The key came before with another request (another path or body)."""

    code = "idempotency_key_reused"
    status = 422
    default_message = "This Idempotency-Key was sent before with another request; use a new key for a new request."


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    replayed: bool = False


def key_of(request) -> str | None:
    """The request's Idempotency-Key, or None without one; ``InvalidInput`` for one that is not
    1 to 255 printable ASCII characters."""
    key = request.META.get(_META)
    if key is None:
        return None
    if not 0 < len(key) <= MAX_KEY or not all(" " < c <= "~" for c in key):
        raise InvalidInput(
            f"{HEADER} must be 1 to {MAX_KEY} printable ASCII characters.",
            fields={HEADER: ["Must be 1 to 255 printable ASCII characters without spaces."]},
        )
    return key


def fingerprint_of(method: str, path: str, data) -> str:
    """What makes two requests the same request: the method, the path and the JSON body."""
    text = json.dumps([method, path, data], sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _kept(user: User, key: str, fingerprint: str) -> Answer | None:
    row = IdempotentRequest.objects.filter(user=user, key=key).first()
    if row is None:
        return None
    if row.created_at <= timezone.now() - timedelta(seconds=settings.COMMENTS_IDEMPOTENCY_TTL):
        IdempotentRequest.objects.filter(pk=row.pk, created_at=row.created_at).delete()
        return None
    if row.fingerprint != fingerprint:
        raise IdempotencyKeyReused()
    return Answer(row.status, bytes(row.body), replayed=True)


def answer_once(*, user: User, key: str, fingerprint: str, write: Callable[[], Answer]) -> Answer:
    """``write()``'s answer, made and kept once per ``(user, key)``: the kept answer when the key
    came before with the same request, ``IdempotencyKeyReused`` when it came with another.
    ``write`` runs in a transaction with the keeping of its answer."""
    kept = _kept(user, key, fingerprint)
    if kept is not None:
        return kept
    try:
        with transaction.atomic():
            answer = write()
            if 200 <= answer.status < 300:
                IdempotentRequest.objects.create(
                    user=user, key=key, fingerprint=fingerprint, status=answer.status, body=answer.body
                )
    except IntegrityError:
        # The same key's first request committed meanwhile: this one's write rolled back.
        kept = _kept(user, key, fingerprint)
        if kept is None:
            raise
        return kept
    return answer


def idempotent_requests_forget() -> int:
    """Forget kept answers older than ``COMMENTS_IDEMPOTENCY_TTL`` (a beat task); how many."""
    before = timezone.now() - timedelta(seconds=settings.COMMENTS_IDEMPOTENCY_TTL)
    return IdempotentRequest.objects.filter(created_at__lte=before).delete()[0]
