"""API.md, Subjects: get-or-create, lookup, detail, moderator changes, counts."""

from __future__ import annotations

import pytest

from comments import services
from comments.services import site_store

from ..factories import CommentFactory, SiteFactory, SubjectFactory
from .conftest import API, SUBJECT_KEYS, assert_error, assert_iso_time


def assert_subject_shape(body):
    assert set(body) >= SUBJECT_KEYS, set(body) ^ SUBJECT_KEYS
    assert isinstance(body["id"], int) and 0 < body["id"] < 2**53
    assert body["mode"] in {"flat", "two_level", "stacked"}
    assert body["state"] in {"open", "closed"}
    assert isinstance(body["comment_count"], int) and isinstance(body["root_count"], int)
    assert_iso_time(body["created_at"])


# --- get or create -------------------------------------------------------------------------


def test_posting_a_new_subject_creates_it_and_posting_it_again_returns_it(client_for, user, site):
    client = client_for(user)
    payload = {"site": site.key, "key": "article:42", "title": "Hello", "url": "https://host.example/a/42"}
    created = client.post(f"{API}/subjects", payload, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert_subject_shape(body)
    assert body["site"] == site.key
    assert body["key"] == "article:42"
    assert body["title"] == "Hello"
    assert body["url"] == "https://host.example/a/42"
    assert body["mode"] == site.default_mode
    assert body["state"] == "open"
    assert (body["comment_count"], body["root_count"]) == (0, 0)

    again = client.post(f"{API}/subjects", {"site": site.key, "key": "article:42", "title": "Other"}, format="json")
    assert again.status_code == 200
    assert again.json()["id"] == body["id"]
    assert again.json()["title"] == "Hello"


def test_a_new_subject_takes_its_sites_default_mode(client_for, user, db):
    site = SiteFactory(key="stackedsite", default_mode="stacked")
    response = client_for(user).post(f"{API}/subjects", {"site": site.key, "key": "/blog/post-1"}, format="json")
    assert response.status_code == 201
    assert response.json()["mode"] == "stacked"


def test_the_same_key_on_two_sites_is_two_subjects(client_for, user, site):
    other = SiteFactory(key="second")
    client = client_for(user)
    a = client.post(f"{API}/subjects", {"site": site.key, "key": "k"}, format="json")
    b = client.post(f"{API}/subjects", {"site": other.key, "key": "k"}, format="json")
    assert (a.status_code, b.status_code) == (201, 201)
    assert a.json()["id"] != b.json()["id"]


def test_posting_a_subject_anonymously_is_not_authenticated(api, site):
    assert_error(api.post(f"{API}/subjects", {"site": site.key, "key": "k"}, format="json"), 401, "not_authenticated")


def test_posting_a_subject_for_an_unknown_site_is_not_found(client_for, user, site):
    response = client_for(user).post(f"{API}/subjects", {"site": "nope", "key": "k"}, format="json")
    assert_error(response, 404, "not_found")


def test_a_subject_key_of_255_characters_is_accepted(client_for, user, site):
    response = client_for(user).post(f"{API}/subjects", {"site": site.key, "key": "k" * 255}, format="json")
    assert response.status_code == 201
    assert response.json()["key"] == "k" * 255


@pytest.mark.parametrize(
    "payload",
    [
        {"key": "k"},
        {"site": "SITE"},
        {"site": "SITE", "key": ""},
        {"site": "SITE", "key": "k" * 256},
        {"site": "SITE", "key": 42},
        {"site": "SITE", "key": ["k"]},
        {"site": "SITE", "key": None},
        {"site": 7, "key": "k"},
        {"site": "SITE", "key": "k", "title": 5},
        {"site": "SITE", "key": "k", "url": "not a url"},
        {"site": "SITE", "key": "k", "url": 12},
        {"site": "SITE", "key": "a\x00b"},
    ],
)
def test_a_subject_with_missing_or_bad_fields_is_invalid(client_for, user, site, payload):
    payload = {k: (site.key if v == "SITE" else v) for k, v in payload.items()}
    assert_error(client_for(user).post(f"{API}/subjects", payload, format="json"), 400, "invalid")


# --- lookup and detail ---------------------------------------------------------------------


def test_lookup_finds_a_subject_by_site_and_key(api, subject):
    response = api.get(f"{API}/subjects/lookup", {"site": subject.site.key, "key": subject.key})
    assert response.status_code == 200
    body = response.json()
    assert_subject_shape(body)
    assert (body["id"], body["key"], body["site"]) == (subject.pk, subject.key, subject.site.key)


def test_a_repeated_lookup_reads_only_the_subject(api, subject, django_assert_num_queries):
    """The site and the key's subject id come from the cache the embed page keeps, so a host
    that looks a page's discussion up again costs one probe by id."""
    params = {"site": subject.site.key, "key": subject.key}
    assert api.get(f"{API}/subjects/lookup", params).status_code == 200
    with django_assert_num_queries(1):
        response = api.get(f"{API}/subjects/lookup", params)
    assert response.json()["id"] == subject.pk


def test_lookup_of_an_unknown_subject_is_not_found(api, subject):
    assert_error(api.get(f"{API}/subjects/lookup", {"site": subject.site.key, "key": "missing"}), 404, "not_found")
    assert_error(api.get(f"{API}/subjects/lookup", {"site": "nosite", "key": subject.key}), 404, "not_found")


@pytest.mark.parametrize(
    "params", [{}, {"site": "SITE"}, {"key": "KEY"}, {"site": "", "key": "KEY"}, {"site": "SITE", "key": ""}]
)
def test_lookup_without_site_and_key_is_invalid(api, subject, params):
    params = {k: {"SITE": subject.site.key, "KEY": subject.key}.get(v, v) for k, v in params.items()}
    assert_error(api.get(f"{API}/subjects/lookup", params), 400, "invalid")


def test_a_subject_is_readable_by_id_with_its_public_counters(api, subject, user):
    root = CommentFactory(subject=subject, author=user)
    CommentFactory(subject=subject, author=user, reply_to=root)
    response = api.get(f"{API}/subjects/{subject.pk}")
    assert response.status_code == 200
    body = response.json()
    assert_subject_shape(body)
    assert body["id"] == subject.pk
    assert body["title"] == subject.title
    assert (body["comment_count"], body["root_count"]) == (2, 1)


def test_an_unknown_subject_id_is_not_found(api, db):
    assert_error(api.get(f"{API}/subjects/123456"), 404, "not_found")


# --- moderator changes ---------------------------------------------------------------------


def test_a_site_moderator_changes_mode_state_and_title(client_for, moderator, subject, api):
    response = client_for(moderator).patch(
        f"{API}/subjects/{subject.pk}", {"mode": "stacked", "state": "closed", "title": "New title"}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert_subject_shape(body)
    assert (body["mode"], body["state"], body["title"]) == ("stacked", "closed", "New title")
    again = api.get(f"{API}/subjects/{subject.pk}").json()
    assert (again["mode"], again["state"], again["title"]) == ("stacked", "closed", "New title")


def test_a_partial_patch_changes_only_the_given_field(client_for, moderator, subject):
    response = client_for(moderator).patch(f"{API}/subjects/{subject.pk}", {"mode": "flat"}, format="json")
    assert response.status_code == 200
    assert (response.json()["mode"], response.json()["state"], response.json()["title"]) == (
        "flat",
        "open",
        subject.title,
    )


def test_staff_may_change_any_sites_subject(client_for, staff, subject):
    response = client_for(staff).patch(f"{API}/subjects/{subject.pk}", {"state": "closed"}, format="json")
    assert response.status_code == 200
    assert response.json()["state"] == "closed"


def test_a_plain_user_may_not_change_a_subject(client_for, user, subject, api):
    assert_error(
        client_for(user).patch(f"{API}/subjects/{subject.pk}", {"state": "closed"}, format="json"),
        403,
        "permission_denied",
    )
    assert api.get(f"{API}/subjects/{subject.pk}").json()["state"] == "open"


def test_a_moderator_of_another_site_may_not_change_a_subject(client_for, subject, user):
    other_site = SiteFactory(key="elsewhere")
    other_site.moderators.add(user)
    assert_error(
        client_for(user).patch(f"{API}/subjects/{subject.pk}", {"mode": "flat"}, format="json"),
        403,
        "permission_denied",
    )


def test_changing_a_subject_anonymously_is_not_authenticated(api, subject):
    assert_error(
        api.patch(f"{API}/subjects/{subject.pk}", {"state": "closed"}, format="json"), 401, "not_authenticated"
    )


@pytest.mark.parametrize(
    "payload", [{"mode": "tree"}, {"mode": ""}, {"mode": 1}, {"state": "locked"}, {"title": 5}, {"title": "t" * 301}]
)
def test_a_subject_patch_with_a_bad_value_is_invalid(client_for, moderator, subject, payload):
    assert_error(client_for(moderator).patch(f"{API}/subjects/{subject.pk}", payload, format="json"), 400, "invalid")


def test_a_patch_of_an_unknown_subject_is_not_found(client_for, moderator, db):
    assert_error(
        client_for(moderator).patch(f"{API}/subjects/987654", {"mode": "flat"}, format="json"), 404, "not_found"
    )


# --- counts --------------------------------------------------------------------------------


def test_counts_returns_public_counts_and_zero_for_unknown_keys(api, site, user):
    a = SubjectFactory(site=site, key="a")
    b = SubjectFactory(site=site, key="b")
    root = CommentFactory(subject=a, author=user)
    CommentFactory(subject=a, author=user, reply_to=root)
    hidden = CommentFactory(subject=a, author=user)
    services.comment_set_status(comment_id=hidden.pk, to_status="pending")
    CommentFactory(subject=a, author=user, visibility="friends")
    CommentFactory(subject=b, author=user)
    response = api.get(f"{API}/counts", {"site": site.key, "key": ["a", "b", "zzz"]})
    assert response.status_code == 200
    assert response.json() == {"counts": {"a": 2, "b": 1, "zzz": 0}}


def test_counts_are_per_site(api, site, user):
    other = SiteFactory(key="other-site")
    CommentFactory(subject=SubjectFactory(site=other, key="same"), author=user)
    response = api.get(f"{API}/counts", {"site": site.key, "key": "same"})
    assert response.json() == {"counts": {"same": 0}}


def test_counts_accepts_one_hundred_keys(api, site):
    keys = [f"k{i}" for i in range(100)]
    response = api.get(f"{API}/counts", {"site": site.key, "key": keys})
    assert response.status_code == 200
    assert response.json()["counts"] == dict.fromkeys(keys, 0)


@pytest.mark.parametrize("n", [0, 101])
def test_counts_with_no_key_or_more_than_one_hundred_keys_is_invalid(api, site, n):
    response = api.get(f"{API}/counts", {"site": site.key, "key": [f"k{i}" for i in range(n)]})
    assert_error(response, 400, "invalid")


def test_counts_without_a_site_is_invalid(api, db):
    assert_error(api.get(f"{API}/counts", {"key": "a"}), 400, "invalid")


def test_counts_asked_from_a_page_of_a_site_need_not_name_the_site(api, site, user):
    """A listing page carries counts but no widget, so the loader knows no site key: the site
    is the one whose allowed origins hold the page's origin, and the page may read the answer."""
    site.allowed_origins = ["https://blog.example/", "https://host.example"]
    site_store(site=site)
    SiteFactory(key="neighbour", allowed_origins=["https://blog.example.org", "https://host.example.net"])
    CommentFactory(subject=SubjectFactory(site=site, key="a"), author=user)
    response = api.get(f"{API}/counts", {"key": ["a", "zzz"]}, HTTP_ORIGIN="https://blog.example")
    assert response.status_code == 200, response.content
    assert response.json() == {"counts": {"a": 1, "zzz": 0}}
    assert response["Access-Control-Allow-Origin"] == "https://blog.example"


def test_counts_without_a_site_from_an_origin_of_no_site_or_of_two_sites_is_invalid(api, site):
    assert_error(api.get(f"{API}/counts", {"key": "a"}, HTTP_ORIGIN="https://stranger.example"), 400, "invalid")
    SiteFactory(key="twin", allowed_origins=list(site.allowed_origins))
    assert_error(api.get(f"{API}/counts", {"key": "a"}, HTTP_ORIGIN=site.allowed_origins[0]), 400, "invalid")
