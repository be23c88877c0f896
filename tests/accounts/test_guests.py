"""API.md, "Guest comments": a reader with no account comments under a name, through the
core's write path (moderation queue, word filter), marked as a guest wherever the comment is
shown; a site that forbids guests, a filled honeypot, a form sent too fast, a forged, reused or
expired form token and a guest over the rate limits are refused in the contract's shape; the
browser that posted, and no other, edits or deletes within the edit window."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.core import signing
from django.utils import timezone
from rest_framework.test import APIClient

from accounts import guests
from accounts.models import Guest
from comments.models import ApiToken, Comment, Status, User
from comments.services import site_store
from moderation.models import ReviewTask
from moderation.services import word_create
from portability.services import user_erase

from ..api.conftest import API, assert_comment_shape, assert_error, assert_user_shape
from ..clocks import shifted_clock
from ..factories import SiteFactory, UserFactory


@pytest.fixture
def site(db, settings):
    settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS = 0  # tests that wait say so
    return SiteFactory(key="blog", signin_guests=True)


@pytest.fixture
def moderator(site):
    mod = UserFactory(username="mod")
    site.moderators.add(mod)
    return mod


def form_token(client, site) -> str:
    response = client.get(f"{API}/guest/form", {"site": site.key})
    assert response.status_code == 200, response.content
    assert response["Cache-Control"] == "no-store"
    return response.json()["token"]


def post(client, site, body="Hello from a guest", *, name="Ada", token: str | None = None, **extra):
    data = {"site": site.key, "key": "post-1", "body": body, "name": name, **extra}
    data.setdefault("form_token", token if token is not None else form_token(client, site))
    return client.post(f"{API}/guest/comments", data, format="json")


def browser_of(answer: dict) -> APIClient:
    """The browser that posted: it holds the token the answer carried."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {answer['token']}")
    return client


def comment_url(answer: dict) -> str:
    return f"{API}/comments/{answer['comment']['id']}"


def test_a_guest_comments_with_a_name_and_is_held_for_review_marked_as_a_guest(
    api, site, moderator, client_for, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = post(api, site, name="  Ada  ", email="Ada@Example.com")
    assert response.status_code == 201, response.content
    answer = response.json()
    comment = answer["comment"]
    assert_comment_shape(comment)
    assert comment["status"] == Status.PENDING  # guests are pre-moderated by default
    assert comment["author"] == {"id": comment["author"]["id"], "name": "Ada", "avatar": None, "guest": True}
    assert_user_shape(answer["user"])
    assert answer["user"]["guest"] is True
    assert "Ada@Example.com".lower() not in response.content.decode().lower()  # never shown

    guest = User.objects.get(pk=comment["author"]["id"])
    assert guest.is_guest and not guest.has_usable_password()
    # Kept for moderators, but not on the user row, whose address notifications are sent to:
    # nobody verified it.
    assert guest.email == "" and Guest.objects.get(user=guest, site=site).email == "ada@example.com"
    # The token lasts as long as the edit window, and only its hash is kept.
    token = ApiToken.objects.get(user=guest)
    assert token.key_hash != answer["token"] and token.site_id == site.pk
    created = Comment.objects.get(pk=comment["id"]).created_at
    assert token.expires_at == created + timedelta(seconds=900)
    # In the moderation queue, with its reason.
    assert ReviewTask.objects.get(comment_id=comment["id"]).reasons == ["policy:guests"]

    subject_id = comment["subject_id"]
    assert api.get(f"{API}/subjects/{subject_id}/comments").json()["items"] == []
    mod = client_for(moderator)
    approved = mod.post(f"{API}/moderation/comments/{comment['id']}/actions", {"action": "approve"}, format="json")
    assert approved.status_code == 200, approved.content
    (shown,) = APIClient().get(f"{API}/subjects/{subject_id}/comments").json()["items"]
    assert shown["author"]["guest"] is True and shown["author"]["name"] == "Ada"
    assert shown["status"] == Status.PUBLISHED


def test_a_guest_named_like_a_member_is_marked_and_the_member_is_not(api, site, client_for):
    member = UserFactory(display_name="Ada")
    site.guest_moderation = "post"
    site_store(site=site)
    assert post(api, site, name="Ada").status_code == 201
    assert (
        post(client_for(member), site, name="Ada", body="I am the real one").status_code == 201
    )  # a new guest: the member's token names no guest
    subject_id = Comment.objects.first().subject_id
    mine = client_for(member).post(f"{API}/subjects/{subject_id}/comments", {"body": "Member here"}, format="json")
    assert mine.status_code == 201, mine.content
    items = api.get(f"{API}/subjects/{subject_id}/comments", {"sort": "old"}).json()["items"]
    assert [(c["author"]["name"], c["author"].get("guest")) for c in items] == [
        ("Ada", True),
        ("Ada", True),
        ("Ada", None),
    ]
    assert items[2]["author"] == {"id": member.pk, "name": "Ada", "avatar": None}


def test_a_site_on_post_moderation_for_guests_shows_their_comments_at_once(api, site, moderator, client_for):
    changed = client_for(moderator).patch(f"{API}/sites/{site.key}/signin", {"guest_moderation": "post"}, format="json")
    assert changed.status_code == 200, changed.content
    assert changed.json()["guest_moderation"] == "post"
    assert api.get(f"{API}/sites/{site.key}/signin").json()["guest_moderation"] == "post"
    assert post(api, site).json()["comment"]["status"] == Status.PUBLISHED
    bad = client_for(moderator).patch(f"{API}/sites/{site.key}/signin", {"guest_moderation": "later"}, format="json")
    assert_error(bad, 400, "invalid")


def test_a_site_that_forbids_guests_refuses_the_form_and_the_comment(api, site):
    other = SiteFactory(key="members-only")  # guests are off on a new site
    assert_error(api.get(f"{API}/guest/form", {"site": other.key}), 403, "guests_not_allowed")
    token = form_token(api, site)
    site.signin_guests = False
    site_store(site=site)
    assert_error(post(api, site, token=token), 403, "guests_not_allowed")
    assert not Comment.objects.exists() and not User.objects.filter(is_guest=True).exists()
    assert_error(api.get(f"{API}/guest/form", {"site": "nowhere"}), 404, "not_found")


def test_a_filled_honeypot_is_refused(api, site):
    error = assert_error(post(api, site, website="http://spam.example"), 400, "invalid")
    assert set(error["fields"]) == {"website"}
    assert not Comment.objects.exists()


def test_a_form_sent_sooner_than_a_person_could_write_it_is_refused(api, site, settings):
    settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS = 60
    shown = api.get(f"{API}/guest/form", {"site": site.key}).json()
    wait = (datetime.fromisoformat(shown["not_before"]) - timezone.now()).total_seconds()
    assert 55 < wait <= 60
    response = post(api, site, token=shown["token"])
    assert_error(response, 400, "too_fast")
    assert 55 <= int(response["Retry-After"]) <= 60
    settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS = 0
    assert post(api, site, token=shown["token"]).status_code == 201  # too fast spends nothing


def test_missing_forged_reused_and_expired_form_tokens_are_refused(api, site, settings, monkeypatch):
    missing = api.post(
        f"{API}/guest/comments", {"site": site.key, "key": "p", "body": "x", "name": "Ada"}, format="json"
    )
    assert set(assert_error(missing, 400, "invalid")["fields"]) == {"form_token"}
    assert_error(post(api, site, token="not-a-token"), 400, "form_token_invalid")
    good = form_token(api, site)
    assert_error(
        post(api, site, token=good[:-3] + ("AAA" if not good.endswith("AAA") else "BBB")), 400, "form_token_invalid"
    )
    elsewhere = SiteFactory(key="elsewhere", signin_guests=True)
    assert_error(post(api, site, token=form_token(api, elsewhere)), 400, "form_token_invalid")

    assert post(api, site, token=good).status_code == 201
    assert_error(post(api, site, token=good), 400, "form_token_used")

    stale = form_token(api, site)
    # Older than ACCOUNTS_GUEST_FORM_MAX_AGE by the clocks the check reads (Django's signing's,
    # which dates the signature, and the service's): moved, not waited for.
    shifted_clock(monkeypatch, guests, signing).advance(settings.ACCOUNTS_GUEST_FORM_MAX_AGE + 1)
    assert_error(post(api, site, token=stale), 400, "form_token_expired")
    assert Comment.objects.count() == 1


def test_guests_have_tighter_rate_limits_per_guest_and_per_address(api, site, settings):
    settings.RATE_LIMITS = {"guest_post": (2, 60), "guest_post_client": (5, 3600), "post": (10, 60)}
    browser = browser_of(post(api, site).json())  # a new guest counts by its address
    assert post(browser, site, body="Second").status_code == 201  # then as the guest its browser holds
    assert post(browser, site, body="Third").status_code == 201
    refused = post(browser, site, body="Fourth")
    assert_error(refused, 429, "rate_limited")
    assert int(refused["Retry-After"]) >= 1
    # Another guest from the same address: one more, then the address is over its limit.
    assert post(APIClient(), site, name="Bob").status_code == 201
    assert_error(post(APIClient(), site, name="Cy"), 429, "rate_limited")
    assert Comment.objects.count() == 4


def test_the_browser_that_posted_edits_and_deletes_within_the_window_and_no_other(api, site, client_for):
    site.guest_moderation = "post"  # published: others see it, and are refused as not its author
    site_store(site=site)
    answer = post(api, site, body="Frist").json()
    browser = browser_of(answer)
    edited = browser.patch(comment_url(answer), {"body": "First"}, format="json")
    assert edited.status_code == 200, edited.content
    assert edited.json()["body"] == "First" and edited.json()["author"]["guest"] is True

    assert_error(APIClient().patch(comment_url(answer), {"body": "Mine now"}, format="json"), 401, "not_authenticated")
    assert_error(APIClient().delete(comment_url(answer)), 401, "not_authenticated")
    other_guest = browser_of(post(APIClient(), site, name="Ada").json())  # same name, another browser
    assert_error(other_guest.patch(comment_url(answer), {"body": "Mine now"}, format="json"), 403, "permission_denied")
    assert_error(other_guest.delete(comment_url(answer)), 403, "permission_denied")
    member = client_for(UserFactory())
    assert_error(member.delete(comment_url(answer)), 403, "permission_denied")

    assert browser.delete(comment_url(answer)).status_code == 204
    assert Comment.objects.get(pk=answer["comment"]["id"]).status == Status.DELETED


def test_after_the_edit_window_the_guest_can_neither_edit_nor_delete(api, site):
    first = post(api, site, body="Old words").json()
    browser = browser_of(first)
    # The same browser posts again later: its token is good again, for the new comment's window.
    second = post(browser, site, body="New words").json()
    assert second["comment"]["author"]["id"] == first["comment"]["author"]["id"]  # the same guest
    browser = browser_of(second)
    Comment.objects.filter(pk=first["comment"]["id"]).update(created_at=timezone.now() - timedelta(seconds=901))
    assert_error(browser.patch(comment_url(first), {"body": "Changed"}, format="json"), 403, "permission_denied")
    assert_error(browser.delete(comment_url(first)), 403, "permission_denied")
    # Once the last window has passed, the browser holds nothing at all.
    ApiToken.objects.filter(user_id=second["user"]["id"]).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert_error(browser.patch(comment_url(second), {"body": "Changed"}, format="json"), 401, "not_authenticated")
    assert_error(browser.delete(comment_url(second)), 401, "not_authenticated")
    assert {c.status for c in Comment.objects.all()} == {Status.PENDING}


def test_an_approved_guest_comment_edited_goes_back_to_review(api, site, moderator, client_for):
    answer = post(api, site).json()
    client_for(moderator).post(
        f"{API}/moderation/comments/{answer['comment']['id']}/actions", {"action": "approve"}, format="json"
    )
    assert Comment.objects.get(pk=answer["comment"]["id"]).status == Status.PUBLISHED
    edited = browser_of(answer).patch(comment_url(answer), {"body": "Now with a link to buy things"}, format="json")
    assert edited.json()["status"] == Status.PENDING
    assert_error(APIClient().get(comment_url(answer)), 404, "not_found")


def test_a_guest_token_cannot_post_around_the_guest_checks(api, site):
    answer = post(api, site).json()
    subject_id = answer["comment"]["subject_id"]
    around = browser_of(answer).post(
        f"{API}/subjects/{subject_id}/comments", {"body": "No form, no wait"}, format="json"
    )
    assert_error(around, 403, "permission_denied")
    assert Comment.objects.count() == 1


def test_a_new_name_in_the_same_browser_is_a_new_guest(api, site):
    first = post(api, site, name="Ada").json()
    again = post(browser_of(first), site, name="Ada L.").json()
    assert again["comment"]["author"]["id"] != first["comment"]["author"]["id"]
    assert again["comment"]["author"]["name"] == "Ada L."


def test_the_word_filter_and_the_other_checks_apply_to_guests(api, site, moderator):
    word_create(actor=moderator, site=site, word="scam", action="block")
    assert_error(post(api, site, body="a scam"), 400, "content_blocked")
    error = assert_error(post(api, site, name="   "), 400, "invalid")
    assert set(error["fields"]) == {"name"}
    assert_error(post(api, site, body="   "), 400, "invalid")
    assert_error(post(api, site, email="not-an-address"), 400, "invalid")
    assert_error(post(api, site, reply_to_id=123456789), 404, "not_found")
    assert not Comment.objects.exists()


def test_the_erasure_of_a_guest_forgets_the_address_they_gave(api, site):
    answer = post(api, site, email="ada@example.com").json()
    guest = User.objects.get(pk=answer["user"]["id"])
    user_erase(user=guest, actor=None)
    assert not Guest.objects.filter(user=guest).exists()


def test_a_guests_name_is_one_line_and_one_of_nothing_visible_is_refused(api, site):
    """Issue 33, F12: a guest's name is kept as every display name is (one line of visible
    text); a name that is only line breaks and direction marks is as blank as "   "."""
    error = assert_error(post(api, site, name="\u202e\r\n\u202c"), 400, "invalid")
    assert set(error["fields"]) == {"name"}
    answer = post(api, site, name="Mallory\r\nBcc: victim@example.com").json()
    assert answer["user"]["name"] == "Mallory Bcc: victim@example.com"
    assert User.objects.get(pk=answer["user"]["id"]).display_name == "Mallory Bcc: victim@example.com"
