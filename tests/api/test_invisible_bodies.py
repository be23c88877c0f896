"""A comment that shows nothing is refused (``400 invalid``, field ``body``) wherever a body is
taken: a post, a reply, an edit and a guest's comment all go through the one check
(``comments.services.check_body``). Invisible characters inside a comment that shows something
stay as they are."""

from __future__ import annotations

import pytest

from comments.models import Comment

from ..factories import CommentFactory, SiteFactory, SubjectFactory
from .conftest import API, assert_error

SHOWS_NOTHING = [
    "\u200b\u200c\u200d\u2060\ufeff",  # zero-width space, non-joiner, joiner, word joiner, BOM
    " \u200b \n\t\u2060 ",  # whitespace around them
    "\u00ad\u200e\u200f\u202a\u202e\u2066\u2069",  # soft hyphen, direction marks and overrides
    "\u3164\u115f\u2800\u034f",  # Hangul fillers, the Braille blank, the grapheme joiner
    "\ufe0f\ufe0f\U000e0041\U000e007f",  # variation selectors and tags alone
    "\x01\x7f\u0085",  # controls
]


def _refused_as_empty(response) -> None:
    error = assert_error(response, 400, "invalid")
    assert set(error["fields"]) == {"body"}, error


@pytest.mark.parametrize("body", SHOWS_NOTHING)
def test_a_post_that_shows_nothing_is_refused(client_for, user, subject, body):
    response = client_for(user).post(f"{API}/subjects/{subject.pk}/comments", {"body": body}, format="json")
    _refused_as_empty(response)
    assert not Comment.objects.filter(subject=subject).exists()


@pytest.mark.parametrize("body", SHOWS_NOTHING)
def test_a_reply_that_shows_nothing_is_refused(client_for, user, subject, body):
    parent = CommentFactory(subject=subject, author=user)
    response = client_for(user).post(
        f"{API}/subjects/{subject.pk}/comments", {"body": body, "reply_to_id": parent.pk}, format="json"
    )
    _refused_as_empty(response)


@pytest.mark.parametrize("body", SHOWS_NOTHING)
def test_an_edit_that_shows_nothing_is_refused_and_the_comment_is_unchanged(client_for, user, subject, body):
    comment = CommentFactory(subject=subject, author=user, body="Something to read")
    response = client_for(user).patch(f"{API}/comments/{comment.pk}", {"body": body}, format="json")
    _refused_as_empty(response)
    assert client_for(user).get(f"{API}/comments/{comment.pk}").json()["body"] == "Something to read"


@pytest.mark.parametrize("body", SHOWS_NOTHING)
def test_a_guests_comment_that_shows_nothing_is_refused(api, settings, db, body):
    settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS = 0
    site = SiteFactory(key="guests", signin_guests=True)
    form = api.get(f"{API}/guest/form", {"site": site.key}).json()["token"]
    response = api.post(
        f"{API}/guest/comments",
        {"site": site.key, "key": "post-1", "body": body, "name": "Ada", "form_token": form},
        format="json",
    )
    _refused_as_empty(response)
    assert not Comment.objects.exists()


@pytest.mark.parametrize("body", ["\u200bhi\u200b", "👨\u200d👩\u200d👧", "می\u200cخواهم", "\u0301", "😀\ufe0f"])
def test_only_what_shows_nothing_is_refused_and_a_comment_keeps_its_invisible_characters(client_for, user, db, body):
    subject = SubjectFactory(site=SiteFactory())
    url = f"{API}/subjects/{subject.pk}/comments"
    _refused_as_empty(client_for(user).post(url, {"body": SHOWS_NOTHING[0]}, format="json"))
    response = client_for(user).post(url, {"body": body}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["body"] == body.strip()
