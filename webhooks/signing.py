"""Signatures of the Standard Webhooks scheme (https://www.standardwebhooks.com/): the receiver
gets ``webhook-id``, ``webhook-timestamp`` (unix seconds) and ``webhook-signature``
(``v1,<base64 of HMAC-SHA256(key, "<id>.<timestamp>.<body>")>``), where the key is the base64
part of the endpoint's ``whsec_…`` secret. Its libraries (``standardwebhooks`` for Python,
JavaScript, Go, ...) verify these as they are."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

PREFIX = "whsec_"


def secret_new() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    key = base64.b64decode(secret.removeprefix(PREFIX))
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def headers(secret: str, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(secret, msg_id, timestamp, body),
    }
