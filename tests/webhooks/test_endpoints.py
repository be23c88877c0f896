"""Endpoints and their delivery log: URLs checked (http and https only), events chosen from the
four; the console's page lists a site's endpoints and deliveries to its moderators only, without
secrets, and redelivers; the admin redelivers too."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from comments.exceptions import InvalidInput
from webhooks import services
from webhooks.models import Delivery, DeliveryState, EventType

from ..factories import CommentFactory, SiteFactory, UserFactory
from .conftest import endpoint_at

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/hook",
        "javascript:alert(1)",
        "file:///etc/passwd",
        "http://",
        "example.com/hook",
        "https://user:pw@example.com/hook",
        "http://example.com:99999/",
        "",
        "https://" + "a" * 2000 + ".com/",
    ],
)
def test_an_endpoint_url_must_be_http_or_https(site, url):
    with pytest.raises(InvalidInput) as refused:
        services.endpoint_create(site=site, url=url, events=["comment.created"])
    assert "url" in refused.value.fields


@pytest.mark.parametrize("events", [[], ["comment.deleted"], "comment.created", None])
def test_an_endpoint_wants_at_least_one_known_event(site, events):
    with pytest.raises(InvalidInput) as refused:
        services.endpoint_create(site=site, url="https://example.com/hook", events=events)
    assert "events" in refused.value.fields


def test_a_new_endpoint_gets_a_secret_of_its_own(site):
    a = services.endpoint_create(site=site, url="https://example.com/a", events=["report.created", "comment.created"])
    b = services.endpoint_create(site=site, url="http://hooks.example.net:9/b", events=["comment.created"])
    assert a.secret.startswith("whsec_") and b.secret.startswith("whsec_") and a.secret != b.secret
    assert a.events == ["comment.created", "report.created"]  # in the contract's order


def signed_in(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


def csrf_post(client: Client, url: str, data: dict):
    page = client.get("/console/webhooks/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    return client.post(url, {**data, "csrfmiddlewaretoken": token})


def test_the_console_page_lists_a_sites_endpoints_and_deliveries_and_redelivers(no_redis, receiver, subject, moderator):
    endpoint = endpoint_at(receiver, subject.site, "/hook", 500)
    CommentFactory(subject=subject)
    delivery = Delivery.objects.get()
    assert delivery.response_code == 500
    client = signed_in(moderator)
    page = client.get(f"/console/webhooks/?site={subject.site.key}")
    html = page.content.decode()
    assert page.status_code == 200
    assert endpoint.url in html and f'id="delivery-{delivery.pk}"' in html and "500" in html
    assert endpoint.secret not in html
    assert "<script>" not in html and " style=" not in html and "<style" not in html  # no inline script or style
    assert 'href="/console/webhooks/' in html  # in the console's navigation

    assert (
        client.post(f"/console/webhooks/deliveries/{delivery.pk}/redeliver", {"site": subject.site.key}).status_code
        == 403
    )  # no CSRF token
    answer = csrf_post(client, f"/console/webhooks/deliveries/{delivery.pk}/redeliver", {"site": subject.site.key})
    assert answer.status_code == 302
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts, delivery.response_code) == (DeliveryState.DELIVERED, 2, 200)
    assert len(receiver.at("/hook")) == 2


def test_a_moderator_of_another_site_sees_and_redelivers_nothing_of_this_one(no_redis, receiver, subject):
    endpoint_at(receiver, subject.site, "/hook", 500)
    CommentFactory(subject=subject)
    delivery = Delivery.objects.get()
    stranger = UserFactory()
    SiteFactory().moderators.add(stranger)
    client = signed_in(stranger)
    assert client.get(f"/console/webhooks/?site={subject.site.key}").status_code == 403
    assert receiver.url("/hook") not in client.get("/console/webhooks/").content.decode()
    answer = csrf_post(client, f"/console/webhooks/deliveries/{delivery.pk}/redeliver", {})
    assert answer.status_code == 404
    delivery.refresh_from_db()
    assert delivery.attempts == 1 and len(receiver.at("/hook")) == 1


def test_the_admin_redelivers_a_failed_delivery(no_redis, receiver, subject, admin_user):
    endpoint_at(receiver, subject.site, "/hook", 500)
    CommentFactory(subject=subject)
    Delivery.objects.update(state=DeliveryState.FAILED, next_attempt_at=None)
    delivery = Delivery.objects.get()
    client = Client()
    client.force_login(admin_user)
    answer = client.post(
        "/admin/webhooks/delivery/", {"action": "redeliver_selected", "_selected_action": [delivery.pk]}
    )
    assert answer.status_code == 302
    delivery.refresh_from_db()
    assert (delivery.state, delivery.attempts) == (DeliveryState.DELIVERED, 2)
    assert [r.answered for r in receiver.at("/hook")] == [500, 200]


def test_the_admin_adds_an_endpoint_through_the_service(db, admin_user, site):
    client = Client()
    client.force_login(admin_user)
    refused = client.post(
        "/admin/webhooks/endpoint/add/",
        {"site": site.pk, "url": "ftp://example.com/", "events": ["comment.created"], "active": "on"},
    )
    assert refused.status_code == 200 and not site.webhook_endpoints.exists()
    added = client.post(
        "/admin/webhooks/endpoint/add/",
        {"site": site.pk, "url": "https://example.com/h", "events": ["comment.created"], "active": "on"},
    )
    assert added.status_code == 302
    assert site.webhook_endpoints.get().secret.startswith("whsec_")


def test_the_operators_command_adds_an_endpoint_and_prints_its_secret(site):
    from io import StringIO

    from django.core.management import CommandError, call_command

    out = StringIO()
    call_command("create_webhook", site.key, "https://example.com/hook", "--event", "report.created", stdout=out)
    endpoint = site.webhook_endpoints.get()
    assert endpoint.events == ["report.created"]
    assert f"secret: {endpoint.secret}" in out.getvalue()
    call_command("create_webhook", site.key, "https://example.com/all", stdout=StringIO())
    assert site.webhook_endpoints.get(url="https://example.com/all").events == list(EventType.values)
    with pytest.raises(CommandError, match="http or https"):
        call_command("create_webhook", site.key, "ftp://example.com/", stdout=StringIO())
    with pytest.raises(CommandError, match="Unknown site"):
        call_command("create_webhook", "nope", "https://example.com/", stdout=StringIO())
