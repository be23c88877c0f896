"""The corpus put in through the service's own doors, as a host site, a reader or a guest would:
the REST API (in process, the same views and checks as over HTTP), the SSO payload a host signs,
the guest form. Each helper asserts the service took the input; what it answered is returned."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rest_framework.test import APIClient

from comments.sso import sign_payload

from .corpus import Payload


@dataclass(frozen=True)
class Reader:
    user_id: int
    token: str


def _ok(response, *codes: int) -> dict:
    assert response.status_code in (codes or (200, 201)), (response.status_code, response.content[:500])
    return response.json()


def sso_reader(api: APIClient, *, site: str, secret: str, external_id: str, name: str, email: str = "") -> Reader:
    """A reader the host signs in with ``name`` (``POST /api/v1/auth/sso``, as the widget
    exchanges the host's payload)."""
    claims = {"id": external_id, "name": name, "exp": int(time.time()) + 3600}
    if email:
        claims["email"] = email
    answer = _ok(api.post("/api/v1/auth/sso", {"site": site, "payload": sign_payload(secret, claims)}, format="json"))
    return Reader(user_id=answer["user"]["id"], token=answer["token"])


def sso_readers(api: APIClient, *, site: str, secret: str, payloads: list[Payload]) -> dict[int, Reader]:
    """One reader a payload, named by it."""
    return {
        p.number: sso_reader(api, site=site, secret=secret, external_id=f"xss-{p.number}", name=p.name)
        for p in payloads
    }


def subject_create(api: APIClient, *, token: str, site: str, key: str, title: str, url: str) -> int:
    """``POST /api/v1/subjects``, as a host's server makes a page's discussion; its id."""
    answer = _ok(
        api.post(
            "/api/v1/subjects",
            {"site": site, "key": key, "title": title, "url": url},
            format="json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        ),
        201,
    )
    return answer["id"]


def comment_post(api: APIClient, *, token: str, subject_id: int, body: str, reply_to: int | None = None) -> dict:
    """``POST /api/v1/subjects/{id}/comments``, as the widget posts; the comment."""
    data: dict = {"body": body}
    if reply_to is not None:
        data["reply_to_id"] = reply_to
    return _ok(
        api.post(f"/api/v1/subjects/{subject_id}/comments", data, format="json", HTTP_AUTHORIZATION=f"Bearer {token}"),
        201,
    )


def guest_post(
    api: APIClient,
    *,
    site: str,
    key: str,
    body: str,
    name: str,
    title: str = "",
    url: str = "",
    reply_to: int | None = None,
) -> dict:
    """A guest's comment through the guest form's API (its token, then the comment); the
    comment. Needs ``ACCOUNTS_GUEST_FORM_MIN_SECONDS = 0``."""
    form = _ok(api.get("/api/v1/guest/form", {"site": site}))
    data: dict[str, object] = {"site": site, "key": key, "body": body, "name": name, "form_token": form["token"]}
    if title:
        data["title"] = title
    if url:
        data["url"] = url
    if reply_to is not None:
        data["reply_to_id"] = reply_to
    return _ok(api.post("/api/v1/guest/comments", data, format="json"), 201)["comment"]
