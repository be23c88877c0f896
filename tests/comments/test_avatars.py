"""Users' pictures are served from the service's origin (comments.avatars): the API and the
widget name the service's path, the service fetches the picture from its host once (a real HTTP
server on loopback here), keeps it and serves it; nothing else can be fetched through it."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.cache import cache
from django.test import Client

from comments import avatars
from comments.avatars import avatar_path
from comments.models import User

from ..factories import CommentFactory, UserFactory

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


class PictureHost:
    """An HTTP server on loopback answering each path as told, counting what it was asked."""

    def __init__(self):
        self.answers: dict[str, tuple[int, dict, bytes]] = {}
        self.asked: list[str] = []
        host = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                host.asked.append(self.path)
                status, headers, body = host.answers.get(self.path, (404, {}, b""))
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def host():
    served = PictureHost()
    yield served
    served.close()


@pytest.fixture(autouse=True)
def _fresh_pictures(settings):
    settings.AVATARS_FETCH_PRIVATE = True  # the picture host is on loopback
    cache.clear()
    yield
    cache.clear()


def picture_of(user) -> str:
    return avatar_path(user.pk, user.avatar_url)


def test_the_api_names_the_service_and_the_service_serves_the_hosts_picture_once(db, host, subject):
    host.answers["/ada.png"] = (200, {"Content-Type": "image/png"}, PNG)
    ada = UserFactory(avatar_url=f"{host.url}/ada.png")
    CommentFactory(subject=subject, author=ada)
    page = Client().get(f"/api/v1/subjects/{subject.pk}/comments?mode=flat").json()
    shown = page["items"][0]["author"]["avatar"]
    assert shown.startswith(f"/avatars/{ada.pk}/") and "127.0.0.1" not in shown

    for _ in range(2):
        response = Client().get(shown)
        assert response.status_code == 200
        assert response["Content-Type"] == "image/png" and response.content == PNG
        assert "immutable" in response["Cache-Control"] and response["X-Content-Type-Options"] == "nosniff"
    assert host.asked == ["/ada.png"]  # fetched once, then kept


def test_a_new_picture_gets_a_new_address_and_the_old_one_is_gone(db, host):
    host.answers["/1.png"] = (200, {"Content-Type": "image/png"}, PNG)
    user = UserFactory(avatar_url=f"{host.url}/1.png")
    old = picture_of(user)
    user.avatar_url = f"{host.url}/2.png"
    user.save()
    assert picture_of(user) != old
    assert Client().get(old).status_code == 404
    assert host.asked == []


def test_the_service_is_no_open_proxy(db, host):
    host.answers["/secret"] = (200, {"Content-Type": "image/png"}, PNG)
    user = UserFactory(avatar_url=f"{host.url}/ada.png")
    forged = f"/avatars/{user.pk}/{'0' * 24}"
    other_users_digest = avatar_path(user.pk + 1000, f"{host.url}/secret")
    for path in (forged, other_users_digest, f"/avatars/{user.pk + 1000}/{picture_of(user).rsplit('/', 1)[1]}"):
        assert Client().get(path).status_code == 404
    assert host.asked == []


@pytest.mark.parametrize(
    "answer",
    [
        (200, {"Content-Type": "text/html"}, b"<script>alert(1)</script>"),
        (
            200,
            {"Content-Type": "image/svg+xml"},
            b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
        ),
        (200, {"Content-Type": "image/png"}, PNG * (avatars.MAX_BYTES // len(PNG) + 1)),
        (500, {"Content-Type": "image/png"}, PNG),
    ],
    ids=["html", "svg", "too big", "server error"],
)
def test_what_is_no_picture_is_never_served_and_the_initial_stands_in(db, host, answer):
    host.answers["/x"] = answer
    user = UserFactory(username="zed", display_name="", avatar_url=f"{host.url}/x")
    for _ in range(2):
        response = Client().get(picture_of(user))
        assert response.status_code == 200
        assert response["Content-Type"] == "image/svg+xml" and b"<script" not in response.content
        assert b">Z</text>" in response.content
        assert "immutable" not in response["Cache-Control"]  # tried again later
    assert host.asked == ["/x"]  # the failure is remembered meanwhile


def test_an_address_with_a_query_and_no_path_asks_for_the_root(db, host):
    host.answers["/?s=64"] = (200, {"Content-Type": "image/png"}, PNG)
    user = UserFactory(avatar_url=f"{host.url}?s=64")
    assert Client().get(picture_of(user)).content == PNG
    assert host.asked == ["/?s=64"]


def test_redirects_are_followed_under_the_same_rules(db, host, settings):
    host.answers["/moved"] = (302, {"Location": "/real.png"}, b"")
    host.answers["/real.png"] = (200, {"Content-Type": "image/png"}, PNG)
    user = UserFactory(avatar_url=f"{host.url}/moved")
    assert Client().get(picture_of(user)).content == PNG
    assert host.asked == ["/moved", "/real.png"]


def test_a_picture_on_a_private_address_is_not_fetched(db, host, settings):
    settings.AVATARS_FETCH_PRIVATE = False
    host.answers["/inside.png"] = (200, {"Content-Type": "image/png"}, PNG)
    user = UserFactory(avatar_url=f"{host.url}/inside.png")
    response = Client().get(picture_of(user))
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    assert host.asked == []


def test_a_user_without_a_picture_has_none(db, subject):
    author = UserFactory(avatar_url="")
    CommentFactory(subject=subject, author=author)
    page = Client().get(f"/api/v1/subjects/{subject.pk}/comments?mode=flat").json()
    assert page["items"][0]["author"]["avatar"] is None
    assert User.objects.get(pk=author.pk).avatar_url == ""


def test_a_redirect_is_checked_as_the_first_address_and_the_metadata_address_never_fetched(db, host, settings):
    # Private addresses allowed (the host is on loopback), and still: its redirect to the
    # cloud's metadata address (link-local) is refused before any connection is made there.
    host.answers["/moved"] = (302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b"")
    user = UserFactory(avatar_url=f"{host.url}/moved")
    with pytest.raises(avatars.PictureUnavailable, match=r"169\.254\.169\.254 is a link-local address"):
        avatars._fetch(user.avatar_url)
    response = Client().get(picture_of(user))
    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    assert host.asked == ["/moved", "/moved"]  # the fetch itself, then the page's: nothing else
