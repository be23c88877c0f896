"""Where deliveries may go (``infra.outbound``, ``WEBHOOKS_DELIVER_PRIVATE``): attacked with
endpoints inside the service's network. With private addresses not allowed (the default), an
endpoint on a loopback address, on a name that resolves to one, or on the cloud's metadata
address (link-local, refused even when private addresses are allowed) gets nothing: refused
before any connection, and the delivery failed at once with the reason, which a real receiver
on loopback confirms (not one connection). A URL certainly inside is refused when it is added.
No redirect is followed, and an error never carries what a non-HTTP service answered. The
console shows receivers' answers to staff only."""

from __future__ import annotations

import socket
import threading
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from comments.exceptions import InvalidInput
from webhooks import services, signing
from webhooks.models import Delivery, DeliveryState, Endpoint

from ..factories import CommentFactory, UserFactory
from .conftest import ALL_EVENTS, endpoint_at

pytestmark = pytest.mark.django_db(transaction=True)


def refused_delivery() -> Delivery:
    delivery = Delivery.objects.get()
    assert (delivery.state, delivery.attempts, delivery.response_code) == (DeliveryState.FAILED, 1, None)
    assert delivery.next_attempt_at is None  # not retried: the rule would refuse it again
    return delivery


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_with_private_addresses_not_allowed_a_loopback_endpoint_gets_nothing(
    no_redis, receiver, subject, settings, host
):
    endpoint_at(receiver, subject.site, "/inside", host=host)  # added while allowed (development)
    settings.WEBHOOKS_DELIVER_PRIVATE = False
    CommentFactory(subject=subject)  # delivered at once (eager, on the task road)
    delivery = refused_delivery()
    if host == "localhost":  # a name: refused for what it resolves to
        assert delivery.error.startswith("refused: localhost resolves to ")
        assert delivery.error.endswith(", not a public address")
    else:
        assert delivery.error == "refused: 127.0.0.1 is not a public address"
    assert receiver.connections == 0 and receiver.at("/inside") == []

    settings.WEBHOOKS_DELIVER_PRIVATE = True  # allowed again: the same endpoint gets it
    CommentFactory(subject=subject)
    assert len(receiver.at("/inside")) == 1 and receiver.connections == 1


@pytest.mark.parametrize("allowed", [False, True])
def test_the_metadata_address_is_refused_before_any_connection_even_with_private_addresses_allowed(
    no_redis, subject, settings, allowed
):
    settings.WEBHOOKS_DELIVER_PRIVATE = allowed
    # As an endpoint stored before the check at registration existed: adding it is refused now.
    Endpoint.objects.create(
        site=subject.site,
        url="http://169.254.169.254/latest/meta-data/",
        secret=signing.secret_new(),
        events=ALL_EVENTS,
    )
    CommentFactory(subject=subject)
    # "refused:" is written only when the rule refused the address, before a socket is opened:
    # a connection attempt would have ended in a timeout or "Network is unreachable".
    assert refused_delivery().error == "refused: 169.254.169.254 is a link-local address"


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/hook",
        "http://127.1/hook",  # 127.0.0.1 to the resolver
        "http://2130706433/hook",  # so is this
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://localhost:8000/hook",
        "http://10.0.0.5/hook",
        "http://192.168.1.10/hook",
        "https://169.254.169.254/latest/meta-data/",
        "http://0.0.0.0/hook",
    ],
)
def test_an_endpoint_url_certainly_inside_the_network_is_refused_when_added(site, url):
    with pytest.raises(InvalidInput) as refused:
        services.endpoint_create(site=site, url=url, events=["comment.created"])
    assert refused.value.status == 400 and refused.value.code == "invalid"
    assert "public address" in refused.value.message and refused.value.fields["url"]
    assert not site.webhook_endpoints.exists()


def test_private_endpoints_may_be_added_when_allowed_but_never_the_metadata_address(site, settings):
    settings.WEBHOOKS_DELIVER_PRIVATE = True
    services.endpoint_create(site=site, url="http://127.0.0.1:8000/hook", events=["comment.created"])
    services.endpoint_create(site=site, url="http://localhost:8000/hook", events=["comment.created"])
    with pytest.raises(InvalidInput, match="public address"):
        services.endpoint_create(site=site, url="http://169.254.169.254/", events=["comment.created"])
    assert site.webhook_endpoints.count() == 2


def test_the_admin_and_the_command_refuse_a_private_endpoint_url(site, admin_user):
    client = Client()
    client.force_login(admin_user)
    page = client.post(
        "/admin/webhooks/endpoint/add/",
        {"site": site.pk, "url": "http://127.0.0.1:6379/", "events": ["comment.created"], "active": "on"},
    )
    assert page.status_code == 200 and "Use a public address" in page.content.decode()
    with pytest.raises(CommandError, match="public address"):
        call_command("create_webhook", site.key, "http://169.254.169.254/", stdout=StringIO())
    assert not site.webhook_endpoints.exists()


def test_a_redirect_is_not_followed(no_redis, receiver, subject):
    endpoint_at(receiver, subject.site, "/moved", (307, b"", {"Location": "/elsewhere"}))
    endpoint_at(receiver, subject.site, "/elsewhere")
    CommentFactory(subject=subject)
    moved = Delivery.objects.get(endpoint__url__endswith="/moved")
    assert (moved.state, moved.response_code) == (DeliveryState.PENDING, 307)  # a failed attempt, retried
    assert len(receiver.at("/elsewhere")) == 1  # its own delivery only, not the redirected one


@pytest.fixture
def banner_service():
    """Not an HTTP server: a service on loopback that answers any connection with its banner
    (as Redis, SSH or SMTP would), to see what an endpoint pointed at it learns."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)
                conn.sendall(b"-ERR internal-banner-of-the-inside-service\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/"
    stop.set()
    thread.join()
    server.close()


def test_an_answer_that_is_not_http_leaves_none_of_its_bytes_in_the_log(no_redis, subject, settings, banner_service):
    settings.WEBHOOKS_DELIVER_PRIVATE = True
    services.endpoint_create(site=subject.site, url=banner_service, events=ALL_EVENTS)
    CommentFactory(subject=subject)
    delivery = Delivery.objects.get()
    assert (delivery.state, delivery.response_code) == (DeliveryState.PENDING, None)
    assert delivery.error == "not an HTTP answer (BadStatusLine)"
    assert "banner" not in delivery.error and delivery.response_excerpt == ""


def test_the_console_shows_receivers_answers_to_staff_only(no_redis, receiver, subject, moderator):
    endpoint_at(receiver, subject.site, "/hook", (500, b"answer-from-the-receiver: internal details"))
    CommentFactory(subject=subject)
    delivery = Delivery.objects.get()
    assert delivery.response_excerpt == "answer-from-the-receiver: internal details"  # kept in the log
    staff = UserFactory(username="staffer", is_staff=True)
    pages = {}
    for user in (moderator, staff):
        client = Client()
        client.force_login(user)
        page = client.get(f"/console/webhooks/?site={subject.site.key}")
        assert page.status_code == 200
        pages[user.username] = page.content.decode()
    for html in pages.values():  # both see the attempt and its status code
        assert f'id="delivery-{delivery.pk}"' in html and ">500" in html
    assert "answer-from-the-receiver" in pages["staffer"]
    assert "answer-from-the-receiver" not in pages["mod"]
    assert "shown to staff only" in pages["mod"] and "shown to staff only" not in pages["staffer"]
