"""The host's address (issue 39, A8): an SSO payload's ``email`` is used for notification emails
only once the reader turns them on with it (``PUT /api/v1/notifications/email``), then under the
rules of an address given at e-mail sign-in, through a real SMTP server; it follows the host's
later payloads, and turning it off stops the emails."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from comments import services as comment_services
from comments.models import User
from notifications import mail
from notifications.models import EmailState, Notification

from ..factories import SiteFactory, SubjectFactory, UserFactory
from ..smtp_server import smtp_server  # noqa: F401  (fixture)
from .conftest import post

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _public_address(settings):
    settings.NOTIFICATIONS_BASE_URL = "https://comments.example.com"


@pytest.fixture
def site(db):
    return SiteFactory(key="blog", name="The Blog", sso_secret="s")


def sso_reader(site, email="ada@host.example") -> tuple[User, APIClient]:
    user = comment_services.sso_user_upsert(site=site, external_id="host-1", name="Ada", email=email)
    raw, _ = comment_services.token_issue(user=user, site=site)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return user, client


def replied_to(site, reader) -> list[str]:
    """Bob replies to a comment of ``reader``'s; the emails' states of ``reader``'s rows."""
    subject = SubjectFactory(site=site)
    parent = post(subject, reader)
    post(subject, UserFactory(username="bob"), "A reply to Ada", reply_to=parent)
    mail.emails_send()
    return list(Notification.objects.filter(recipient=reader).values_list("email", flat=True))


def test_the_hosts_address_is_offered_but_never_used_before_the_reader_turns_it_on(site, smtp_server):
    reader, client = sso_reader(site)
    state = client.get("/api/v1/notifications/email").json()
    assert state == {"address": "", "offered": "ada@host.example", "from_host": False}
    assert replied_to(site, reader) == [EmailState.SKIPPED]
    assert smtp_server.messages == []


def test_turned_on_replies_are_emailed_there_with_the_unsubscribe_link(site, smtp_server):
    reader, client = sso_reader(site)
    turned_on = client.put("/api/v1/notifications/email")
    assert turned_on.status_code == 200
    assert turned_on.json() == {"address": "ada@host.example", "offered": None, "from_host": True}

    assert replied_to(site, reader) == [EmailState.SENT]
    (message,) = smtp_server.wait_for(1)
    assert message["To"] == "ada@host.example"
    assert "A reply to Ada" in message.get_body(("plain",)).get_content()
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"


def test_the_address_follows_the_hosts_payloads_and_turning_it_off_stops_the_emails(site, smtp_server):
    reader, client = sso_reader(site)
    client.put("/api/v1/notifications/email")
    comment_services.sso_user_upsert(site=site, external_id="host-1", name="Ada", email="ada@new.example")
    reader.refresh_from_db()
    assert reader.email == "ada@new.example"

    turned_off = client.delete("/api/v1/notifications/email")
    assert turned_off.json() == {"address": "", "offered": "ada@new.example", "from_host": False}
    assert replied_to(site, reader) == [EmailState.SKIPPED]
    assert smtp_server.messages == []
    # Off, a new payload's address is not taken either.
    comment_services.sso_user_upsert(site=site, external_id="host-1", name="Ada", email="ada@third.example")
    assert User.objects.get(pk=reader.pk).email == ""


def test_an_account_with_its_own_address_or_no_hosts_address_is_refused(site):
    reader, client = sso_reader(site, email="")
    assert client.get("/api/v1/notifications/email").json() == {"address": "", "offered": None, "from_host": False}
    refused = client.put("/api/v1/notifications/email")
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "permission_denied"

    own = UserFactory(email="grace@example.com")
    raw, _ = comment_services.token_issue(user=own, site=site)
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert other.put("/api/v1/notifications/email").status_code == 403
    assert other.delete("/api/v1/notifications/email").status_code == 403
    assert User.objects.get(pk=own.pk).email == "grace@example.com"  # never cleared from here

    assert APIClient().get("/api/v1/notifications/email").status_code == 401
