"""API.md, Conventions: the error body everywhere, JSON 404s under /api/, 405s, malformed
JSON, and never a 500 or an HTML page for bad input."""

from __future__ import annotations

import json

import pytest

from ..factories import CommentFactory, UserFactory
from .conftest import API, assert_error

KNOWN_CODES = {
    "invalid",
    "content_blocked",
    "not_authenticated",
    "permission_denied",
    "subject_closed",
    "banned",
    "not_found",
    "method_not_allowed",
    "rate_limited",
    "unsupported_media_type",
    "not_acceptable",
    "payload_too_large",
    "uri_too_long",
}


def assert_json_answer(response, what):
    """Any answer to bad input: not a server error, JSON, and an error body when it fails."""
    assert response.status_code < 500, (what, response.status_code, response.content[:300])
    if response.status_code == 204:
        return
    content_type = response.get("Content-Type", "")
    assert content_type.startswith("application/json"), (
        what,
        response.status_code,
        content_type,
        response.content[:200],
    )
    body = response.json()
    if response.status_code >= 400:
        assert set(body) == {"error"}, (what, body)
        assert body["error"]["code"] in KNOWN_CODES, (what, body)
        assert isinstance(body["error"]["message"], str) and body["error"]["message"], (what, body)
        assert set(body["error"]) <= {"code", "message", "fields"}, (what, body)


# --- unknown URLs and ids ------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/api/",
        "/api/v1/",
        "/api/v1/nope",
        "/api/v2/comments",
        "/api/v1/comments",
        "/api/v1/subjects/1/nope",
        "/api/v1/comments/1/likes/extra",
        "/api/v1/users",
        "/api/anything/at/all",
        "/api/v1/me/",
    ],
)
def test_an_unknown_url_under_api_is_a_json_404(api, db, path):
    assert_error(api.get(path), 404, "not_found")
    assert_error(api.post(path, {}, format="json"), 404, "not_found")


@pytest.mark.parametrize(
    "template",
    [
        "/api/v1/comments/{}",
        "/api/v1/comments/{}/replies",
        "/api/v1/comments/{}/chain",
        "/api/v1/comments/{}/tree",
        "/api/v1/subjects/{}",
        "/api/v1/subjects/{}/comments",
        "/api/v1/users/{}/comments",
    ],
)
@pytest.mark.parametrize(
    "bad_id",
    [
        "99999999999999999999",
        "9007199254740992",
        "9999999999999999",
        "0",
        "-1",
        "abc",
        "1e5",
        "1.0",
        "%00",
        "00000000000000000001",
        "9" * 200,
    ],
)
def test_an_unknown_or_out_of_range_id_in_the_path_is_a_json_404(api, db, template, bad_id):
    assert_error(api.get(template.format(bad_id)), 404, "not_found")


@pytest.mark.parametrize("bad_id", ["99999999999999999999", "0", "abc", "9007199254740992"])
def test_writes_to_an_out_of_range_id_are_json_404s(client_for, user, bad_id):
    client = client_for(user)
    assert_error(client.patch(f"{API}/comments/{bad_id}", {"body": "x"}, format="json"), 404, "not_found")
    assert_error(client.delete(f"{API}/comments/{bad_id}"), 404, "not_found")
    assert_error(client.post(f"{API}/subjects/{bad_id}/comments", {"body": "x"}, format="json"), 404, "not_found")
    assert_error(client.put(f"{API}/users/{bad_id}/follow"), 404, "not_found")


# --- methods -------------------------------------------------------------------------------


def test_a_wrong_method_is_method_not_allowed(api, client_for, user, subject):
    comment = CommentFactory(subject=subject, author=user)
    client = client_for(user)
    cases = [
        (api.get, f"{API}/auth/token"),
        (api.get, f"{API}/auth/sso"),
        (client.delete, f"{API}/me"),
        (client.post, f"{API}/me"),
        (client.get, f"{API}/subjects"),
        (client.put, f"{API}/subjects/{subject.pk}"),
        (client.delete, f"{API}/subjects/{subject.pk}"),
        (api.post, f"{API}/subjects/lookup"),
        (api.post, f"{API}/counts"),
        (client.put, f"{API}/subjects/{subject.pk}/comments"),
        (client.post, f"{API}/comments/{comment.pk}"),
        (client.put, f"{API}/comments/{comment.pk}"),
        (api.post, f"{API}/comments/{comment.pk}/replies"),
        (api.delete, f"{API}/comments/{comment.pk}/chain"),
        (api.post, f"{API}/comments/{comment.pk}/tree"),
        (api.post, f"{API}/users/{user.pk}/comments"),
        (client.get, f"{API}/users/{user.pk}/follow"),
        (client.post, f"{API}/users/{user.pk}/follow"),
    ]
    for method, url in cases:
        error = assert_error(method(url), 405, "method_not_allowed")
        assert error["message"]


# --- malformed bodies ----------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["{", "{'body': 'x'}", '{"body": "x",}', "", "nul\x00", '{"body": NaN}', "\xff"])
def test_a_malformed_json_body_is_invalid(client_for, user, subject, raw):
    response = client_for(user).generic(
        "POST", f"{API}/subjects/{subject.pk}/comments", raw.encode("latin-1"), content_type="application/json"
    )
    assert_error(response, 400, "invalid")  # an empty body is no object either: "body" is missing


@pytest.mark.parametrize("raw", ["[]", '"body"', "null", "12", "true", '[{"body": "x"}]'])
def test_a_json_body_that_is_not_an_object_is_invalid(client_for, user, subject, raw):
    response = client_for(user).generic(
        "POST", f"{API}/subjects/{subject.pk}/comments", raw, content_type="application/json"
    )
    assert_error(response, 400, "invalid")


WRITE_ENDPOINTS = [
    ("POST", "/auth/token"),
    ("POST", "/auth/sso"),
    ("POST", "/subjects"),
    ("PATCH", "/subjects/{subject}"),
    ("POST", "/subjects/{subject}/comments"),
    ("PATCH", "/comments/{comment}"),
]
DEEP_BODIES = {"array": "[" * 100_000 + "]" * 100_000, "object": '{"a":' * 2000 + "1" + "}" * 2000}


@pytest.mark.parametrize("nesting", list(DEEP_BODIES))
@pytest.mark.parametrize("method, template", WRITE_ENDPOINTS, ids=[f"{m} {t}" for m, t in WRITE_ENDPOINTS])
def test_a_deeply_nested_json_body_is_invalid_not_a_server_error(
    client_for, moderator, subject, method, template, nesting
):
    comment = CommentFactory(subject=subject, author=moderator)
    url = API + template.format(subject=subject.pk, comment=comment.pk)
    response = client_for(moderator).generic(method, url, DEEP_BODIES[nesting], content_type="application/json")
    assert_error(response, 400, "invalid")


def test_a_body_with_a_lone_surrogate_is_refused_cleanly(client_for, user, subject):
    response = client_for(user).generic(
        "POST", f"{API}/subjects/{subject.pk}/comments", '{"body": "a\\ud800b"}', content_type="application/json"
    )
    assert response.status_code in (201, 400), (response.status_code, response.content[:300])
    if response.status_code == 400:
        assert_error(response, 400, "invalid")


@pytest.mark.parametrize("method, template", WRITE_ENDPOINTS, ids=[f"{m} {t}" for m, t in WRITE_ENDPOINTS])
def test_a_body_over_the_upload_limit_is_refused_cleanly(client_for, moderator, subject, method, template):
    comment = CommentFactory(subject=subject, author=moderator)
    url = API + template.format(subject=subject.pk, comment=comment.pk)
    raw = json.dumps({"body": "a" * 300_000, "username": "u", "password": "p", "site": "s", "key": "k"})
    response = client_for(moderator).generic(method, url, raw, content_type="application/json")
    assert response.status_code in (400, 413), (response.status_code, response.content[:300])
    assert_json_answer(response, "large body")


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]
)
def test_a_body_that_is_not_json_is_refused_with_a_json_error(client_for, user, subject, content_type):
    response = client_for(user).generic(
        "POST", f"{API}/subjects/{subject.pk}/comments", "body=x", content_type=content_type
    )
    assert 400 <= response.status_code < 500
    assert_json_answer(response, content_type)


def test_an_html_accept_header_still_gets_json_errors(api, db):
    response = api.get(f"{API}/comments/123", HTTP_ACCEPT="text/html")
    assert 400 <= response.status_code < 500
    assert "<html" not in response.content.decode(errors="replace").lower()
    assert_json_answer(response, "accept html")
    response = api.get("/api/v1/nope", HTTP_ACCEPT="text/html")
    assert_error(response, 404, "not_found")


# --- garbage input on every endpoint ---------------------------------------------------------


ENDPOINTS = [
    ("post", "/auth/token"),
    ("post", "/auth/sso"),
    ("get", "/me"),
    ("post", "/subjects"),
    ("get", "/subjects/lookup"),
    ("get", "/subjects/{subject}"),
    ("patch", "/subjects/{subject}"),
    ("get", "/counts"),
    ("get", "/subjects/{subject}/comments"),
    ("post", "/subjects/{subject}/comments"),
    ("get", "/comments/{comment}"),
    ("patch", "/comments/{comment}"),
    ("get", "/comments/{comment}/replies"),
    ("get", "/comments/{reply}/replies"),
    ("get", "/comments/{comment}/chain"),
    ("get", "/comments/{comment}/tree"),
    ("get", "/users/{user}/comments"),
    ("put", "/users/{other}/follow"),
    ("delete", "/users/{other}/follow"),
    ("delete", "/comments/{comment}"),
]

GARBAGE_QUERIES: list[dict] = [
    {"limit": "\x00"},
    {"cursor": "\x00"},
    {"sort": "\x00"},
    {"mode": "\x00"},
    {"replies": "\x00"},
    {"site": "\x00", "key": "\x00"},
    {"site": "SITE", "key": ["\x00", "b"]},
    {"site": "SITE", "key": "a\x00b"},
    {"site": "SITE", "key": ["k"] * 150},
    {"site": "x" * 5000, "key": "y" * 5000},
    {"limit": "9" * 5000},
    {"cursor": "a" * 20000},
    {"replies": "1e3"},
    {"limit": "\u0661\u0662"},
    {"sort": ["hot", "new"]},
    {"mode": ["flat", "stacked"]},
    {"limit": "NaN"},
    {"limit": "inf"},
    {"replies": "-0"},
    {"\x00": "\x00"},
    {"cursor": "%"},
    {"mode": "stacked", "sort": "hot"},
    {"limit": ["1", "x"]},
]

RAW_QUERIES = [
    "site=SITE&key=%ED%A0%80",
    "site=%ff%fe&key=%c0%80",
    "limit=%ff",
    "cursor=%ED%A0%80",
    "sort=%00%00",
    "key",
    "&&&",
    "limit=1&limit=&limit=x",
    "site=SITE&key=" + "%00" * 300,
    "mode=%E2%80%AE",
    "replies=%ef%bc%93",
]

GARBAGE_BODIES = [
    "{",
    "[]",
    "null",
    '"str"',
    "123",
    "true",
    '{"body": {"a": 1}}',
    '{"body": "\\u0000"}',
    '{"reply_to_id": 1e309, "body": "x"}',
    '{"reply_to_id": 99999999999999999999999999, "body": "x"}',
    '{"body": "x", "visibility": {}}',
    '{"username": "\\u0000", "password": "\\u0000"}',
    '{"username": "a\\ud800", "password": "x"}',
    '{"site": "\\u0000", "payload": "\\u0000"}',
    '{"site": "SITE", "payload": "\\ud800.\\ud800"}',
    '{"site": "\\u0000", "key": "\\u0000"}',
    '{"site": "SITE", "key": "k\\ud800"}',
    '{"site": "SITE", "key": "k", "title": "t\\ud800"}',
    '{"mode": "\\u0000", "state": null, "title": "\\u0000"}',
    '{"title": "\\ud800"}',
    '{"body": "\\ud800"}',
    '{"body": NaN}',
    '{"body": "' + "a" * 30000 + '"}',
    '{"a":' * 200 + "1" + "}" * 200,
    '{"site": ["x"], "key": {"k": 1}, "title": [], "url": {}}',
    '{"site": "SITE", "key": "k", "url": "http://\\u0000"}',
    '{"body": "x", "reply_to_id": "REPLY"}',
]


@pytest.fixture
def garbage_world(site, subject, user, other_user, moderator):
    comment = CommentFactory(subject=subject, author=user)
    reply = CommentFactory(subject=subject, author=user, reply_to=comment)
    return {
        "subject": subject.pk,
        "comment": comment.pk,
        "reply": reply.pk,
        "user": user.pk,
        "other": other_user.pk,
        "site": site.key,
    }


@pytest.mark.parametrize("method, template", ENDPOINTS, ids=[f"{m} {t}" for m, t in ENDPOINTS])
def test_garbage_input_never_gets_a_server_error_or_html(
    api, client_for, garbage_world, user, moderator, method, template
):
    failures = []
    clients = {"anonymous": api, "user": client_for(user), "moderator": client_for(moderator)}
    url = API + template.format(**garbage_world)

    def attempt(what, call):
        try:
            assert_json_answer(call(), what)
        except AssertionError as exc:
            failures.append(str(exc)[:400])

    for who, client in clients.items():
        for query in GARBAGE_QUERIES:
            query = {k: (garbage_world["site"] if v == "SITE" else v) for k, v in query.items()}
            if method == "get":
                attempt((who, query), lambda client=client, query=query: client.get(url, query))
            else:
                from urllib.parse import urlencode

                attempt(
                    (who, query),
                    lambda client=client, query=query: client.generic(
                        method.upper(), url + "?" + urlencode(query, doseq=True), "{}", content_type="application/json"
                    ),
                )
        for raw_query in RAW_QUERIES:
            raw_query = raw_query.replace("SITE", garbage_world["site"])
            attempt(
                (who, raw_query),
                lambda client=client, raw_query=raw_query: client.generic(
                    method.upper(), f"{url}?{raw_query}", "{}", content_type="application/json"
                ),
            )
        if method == "get":
            continue
        for raw in GARBAGE_BODIES:
            raw = raw.replace("SITE", garbage_world["site"]).replace('"REPLY"', f'"{garbage_world["reply"]}"')
            attempt(
                (who, raw[:60]),
                lambda client=client, raw=raw: client.generic(
                    method.upper(), url, raw.encode("utf-8", "surrogatepass"), content_type="application/json"
                ),
            )
    assert not failures, f"{len(failures)} bad answers:\n" + "\n".join(failures[:30])


def test_an_invalid_token_on_a_public_read_is_not_authenticated(api, subject):
    api.credentials(HTTP_AUTHORIZATION="Bearer nonsense")
    assert_error(api.get(f"{API}/subjects/{subject.pk}/comments"), 401, "not_authenticated")


def test_validation_errors_name_the_fields(client_for, user, subject):
    error = assert_error(
        client_for(user).post(f"{API}/subjects/{subject.pk}/comments", {"body": 5, "reply_to_id": "x"}, format="json"),
        400,
        "invalid",
    )
    assert {"body", "reply_to_id"} <= set(error["fields"])


def test_a_nul_byte_in_a_query_parameter_is_invalid_not_a_server_error(api, subject, user):
    CommentFactory(subject=subject, author=user)
    for params in ({"site": subject.site.key, "key": "a\x00"}, {"site": "\x00", "key": "k"}):
        assert_error(api.get(f"{API}/subjects/lookup", params), 400, "invalid")
    assert_error(api.get(f"{API}/counts", {"site": subject.site.key, "key": ["ok", "n\x00l"]}), 400, "invalid")
    for params in (
        {"cursor": "\x00"},
        {"limit": "1\x00"},
        {"sort": "new\x00"},
        {"mode": "flat\x00"},
        {"replies": "\x003"},
    ):
        assert_error(api.get(f"{API}/subjects/{subject.pk}/comments", params), 400, "invalid")


def test_a_user_object_never_carries_email_anywhere(api, client_for, subject):
    author = UserFactory(username="mailer", email="secret@example.com")
    root = CommentFactory(subject=subject, author=author)
    CommentFactory(subject=subject, author=author, reply_to=root)
    urls = [
        f"{API}/subjects/{subject.pk}/comments",
        f"{API}/subjects/{subject.pk}/comments?mode=stacked",
        f"{API}/comments/{root.pk}",
        f"{API}/comments/{root.pk}/replies",
        f"{API}/users/{author.pk}/comments",
    ]
    for url in urls:
        assert "secret@example.com" not in api.get(url).content.decode()
    assert "secret@example.com" not in client_for(author).get(f"{API}/me").content.decode()
