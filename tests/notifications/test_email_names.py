"""Issue 33, F12: a display name with a line break made every notification email about its
author fail at every retry, so its recipients never got mail, and what followed the break
("Bcc: victim@…") asked to be a header of its own. Each way a name comes in keeps it as one line
of visible text (``comments.names.clean_display_name``), and the reply notification about its
author reaches its recipient, read from a real SMTP server on loopback, with one Subject line
and no header of the name's making. A name stored before the fix reaches them too, and a message
that can never be made is marked failed once while the rest of the batch goes."""

from __future__ import annotations

import json
import time

import pytest

from accounts.oidc import services as oidc_services
from comments.models import User
from comments.services import site_store
from comments.sso import sign_payload
from notifications import mail
from notifications.models import EmailState, Notification
from portability.services import import_file

from ..accounts.test_email_link import ask, link_in, token_of, verifier_of, verify
from ..api.conftest import API
from ..factories import CommentFactory, UserFactory
from ..smtp_server import smtp_server  # noqa: F401  (fixture)
from .conftest import post, settle

pytestmark = pytest.mark.django_db(transaction=True)

NAMED = "Mallory\r\nBcc: victim@example.com"
ONE_LINE = "Mallory Bcc: victim@example.com"


def subject_line(message) -> str:
    """The received Subject as a reader's mail program shows it (its encoded words decoded)."""
    return str(message["Subject"]).strip()


def replied(subject, author, parent) -> User:
    CommentFactory(subject=subject, author=author, body="A reply", reply_to=parent)
    settle()
    return author


# --- the ways a name comes in: each signs the author in (or imports them) and replies ----------


def by_sso(api, site, subject, parent, **_) -> User:
    claims = {"id": "host-7", "name": NAMED, "exp": int(time.time()) + 600}
    signed_in = api.post(
        f"{API}/auth/sso", {"site": site.key, "payload": sign_payload(site.sso_secret, claims)}, format="json"
    )
    assert signed_in.status_code == 200, signed_in.content
    return replied(subject, User.objects.get(pk=signed_in.json()["user"]["id"]), parent)


def by_openid_connect(site, subject, parent, settings, **_) -> User:
    settings.ACCOUNTS_OIDC_PROVIDERS = {"corp": {"kind": "oidc", "name": "Corp", "client_id": "c", "secret": "s"}}
    site.signin_oidc = ["corp"]
    site_store(site=site, fields=["signin_oidc"])
    *_token, user = oidc_services.oidc_sign_in(
        site=site, provider="corp", uid="m-1", name=NAMED, verified_emails=[], extra_data={}
    )
    return replied(subject, user, parent)


def as_guest(api, site, subject, parent, settings, **_) -> User:
    settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS = 0
    site.signin_guests, site.guest_moderation = True, "post"  # published at once, so notified at once
    site_store(site=site, fields=["signin_guests", "guest_moderation"])
    form = api.get(f"{API}/guest/form", {"site": site.key}).json()["token"]
    data = {"site": site.key, "key": subject.key, "body": "A reply", "name": NAMED, "form_token": form}
    posted = api.post(f"{API}/guest/comments", {**data, "reply_to_id": parent.pk}, format="json")
    assert posted.status_code == 201, posted.content
    settle()
    return User.objects.get(pk=posted.json()["comment"]["author"]["id"])


def by_email_link(api, site, subject, parent, smtp_server, **_) -> User:
    asked = ask(api, site, email="mallory@example.com", name=NAMED)
    assert asked.status_code == 202, asked.content
    (message,) = smtp_server.wait_for(1)
    signed_in = verify(api, token_of(link_in(message)), verifier_of(asked))
    return replied(subject, User.objects.get(pk=signed_in.json()["user"]["id"]), parent)


def imported(site, subject, parent, tmp_path, **_) -> User:
    lines = [
        {"type": "export", "format": "comments-jsonl", "version": 1},
        {"type": "subject", "id": "s1", "key": "imported-post"},
        {
            "type": "comment",
            "id": "c1",
            "subject_id": "s1",
            "created_at": "2024-01-02T03:04:05Z",
            "status": "published",
            "body": "From the old system",
            "author": {"id": "m-1", "name": NAMED},
        },
    ]
    path = tmp_path / "export.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines))
    import_file(site=site, format="json", path=str(path))
    return replied(subject, User.objects.get(externalidentity__external_id="m-1"), parent)


@pytest.mark.parametrize("way_in", [by_sso, by_openid_connect, as_guest, by_email_link, imported])
def test_a_name_with_a_line_break_is_kept_as_one_line_and_the_email_about_its_author_arrives(
    way_in, api, site, subject, alice, settings, smtp_server, tmp_path
):
    parent = post(subject, alice, "Hello")
    author = way_in(
        api=api,
        site=site,
        subject=subject,
        parent=parent,
        settings=settings,
        smtp_server=smtp_server,
        tmp_path=tmp_path,
    )
    assert User.objects.get(pk=author.pk).display_name == ONE_LINE

    before = len(smtp_server.messages)
    assert mail.emails_send() == 1
    message = smtp_server.wait_for(before + 1)[-1]
    assert smtp_server.recipients()[-1] == ["alice@example.com"]  # and nobody the name named
    assert message["Bcc"] is None
    assert subject_line(message).startswith(f"{ONE_LINE} replied to your comment")
    assert "\n" not in subject_line(message) and "\r" not in subject_line(message)


def test_a_name_stored_with_a_line_break_before_the_fix_does_not_stop_the_email_about_its_author(
    smtp_server, subject, alice
):
    parent = post(subject, alice, "Hello")
    author = UserFactory(username="mallory", display_name=NAMED)  # a row no way in cleaned
    post(subject, author, "A reply", reply_to=parent)

    assert mail.emails_send() == 1
    (message,) = smtp_server.wait_for(1)
    assert smtp_server.recipients() == [["alice@example.com"]]
    assert message["Bcc"] is None
    assert subject_line(message).startswith(f"{ONE_LINE} replied to your comment")
    assert list(Notification.objects.filter(recipient=alice).values_list("email", flat=True)) == [EmailState.SENT]


def test_bidi_overrides_in_a_name_reach_neither_the_database_nor_the_email(api, site, subject, alice, smtp_server):
    parent = post(subject, alice, "Hello")
    claims = {"id": "host-8", "name": "\u202eAda\u202c \u2066Lovelace\u2069", "exp": int(time.time()) + 600}
    signed_in = api.post(
        f"{API}/auth/sso", {"site": site.key, "payload": sign_payload(site.sso_secret, claims)}, format="json"
    )
    author = replied(subject, User.objects.get(pk=signed_in.json()["user"]["id"]), parent)
    assert author.display_name == "Ada Lovelace"
    mail.emails_send()
    (message,) = smtp_server.wait_for(1)
    assert subject_line(message).startswith("Ada Lovelace replied to your comment")


def test_a_message_that_cannot_be_made_is_marked_failed_once_and_the_rest_of_the_batch_goes(
    smtp_server, subject, alice, bob, carol
):
    parent_a, parent_c = post(subject, alice, "Hello"), post(subject, carol, "Hi")
    post(subject, bob, "to alice", reply_to=parent_a)
    post(subject, bob, "to carol", reply_to=parent_c)
    # An address no header can carry (written around every check of the ways in).
    User.objects.filter(pk=alice.pk).update(email="alice@example.com\nBcc: victim@example.com")

    assert mail.emails_send() == 1
    assert smtp_server.wait_for(1) and smtp_server.recipients() == [["carol@example.com"]]
    assert Notification.objects.get(recipient=alice).email == EmailState.FAILED
    assert mail.emails_send() == 0  # not retried at the next run, nor at any other
    assert Notification.objects.get(recipient=alice).email == EmailState.FAILED
    assert len(smtp_server.messages) == 1
