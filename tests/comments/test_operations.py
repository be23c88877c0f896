import pytest
from django.core.exceptions import ImproperlyConfigured
from rest_framework.test import APIClient

from comments.models import CommentContent
from config.env import database_from_url, parse_rate_limits

from ..factories import UserFactory


def test_rate_limits_are_read_from_one_setting():
    assert parse_rate_limits("post=10/min,like=120/min,report=20/h,login=10/min") == {
        "post": (10, 60),
        "like": (120, 60),
        "report": (20, 3600),
        "login": (10, 60),
    }
    assert parse_rate_limits("off") == {}
    with pytest.raises(ImproperlyConfigured):
        parse_rate_limits("post=ten/min")


def test_database_urls_map_to_django_settings():
    pg = database_from_url("postgres://u:p%40ss@db.example:6543/comments")
    assert (pg["ENGINE"], pg["NAME"], pg["USER"], pg["PASSWORD"], pg["HOST"], pg["PORT"]) == (
        "django.db.backends.postgresql",
        "comments",
        "u",
        "p@ss",
        "db.example",
        "6543",
    )
    assert pg["OPTIONS"]["server_side_binding"] is True
    assert database_from_url("postgres://db/c?server_side_binding=0")["OPTIONS"]["server_side_binding"] is False
    # Statements are prepared after 5 runs unless told otherwise (Django's own default is never).
    assert database_from_url("postgres://db/c")["OPTIONS"]["prepare_threshold"] == 5
    assert database_from_url("postgres://db/c?prepare_threshold=off")["OPTIONS"]["prepare_threshold"] is None
    assert database_from_url("postgres://db/c?prepare_threshold=2")["OPTIONS"]["prepare_threshold"] == 2
    assert database_from_url("postgres://db/c?server_side_binding=0")["OPTIONS"]["prepare_threshold"] is None
    assert database_from_url("sqlite:////var/lib/c.db")["NAME"] == "/var/lib/c.db"
    with pytest.raises(ImproperlyConfigured):
        database_from_url("mysql://x@y/z")


def test_posting_over_the_rate_limit_is_429_with_retry_after(settings, client_for, subject):
    settings.RATE_LIMITS = {"post": (2, 60)}
    client = client_for(UserFactory())
    url = f"/api/v1/subjects/{subject.id}/comments"
    assert [client.post(url, {"body": f"c{i}"}, format="json").status_code for i in range(2)] == [201, 201]
    refused = client.post(url, {"body": "one too many"}, format="json")
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "rate_limited"
    assert 1 <= int(refused["Retry-After"]) <= 60
    # reading is not limited, and another user has their own budget
    assert client.get(url).status_code == 200
    assert client_for(UserFactory()).post(url, {"body": "mine"}, format="json").status_code == 201


def test_login_attempts_are_rate_limited(settings, db):
    settings.RATE_LIMITS = {"login": (3, 60)}
    client = APIClient()
    codes = [
        client.post("/api/v1/auth/token", {"username": "x", "password": "y"}, format="json").status_code
        for _ in range(4)
    ]
    assert codes == [401, 401, 401, 429]


def test_a_client_cannot_choose_the_address_it_is_counted_and_kept_by(settings, client_for, subject):
    """X-Forwarded-For was read whole, as the client wrote it: a new value per request escaped
    the sign-in limit, and the address kept with a comment was the server's own peer."""
    settings.RATE_LIMITS = {"login": (2, 60)}
    client = APIClient(REMOTE_ADDR="203.0.113.7")
    codes = [
        client.post(
            "/api/v1/auth/token", {"username": "x", "password": "y"}, format="json", HTTP_X_FORWARDED_FOR=f"10.0.0.{n}"
        ).status_code
        for n in range(3)
    ]
    assert codes == [401, 401, 429]

    author = client_for(UserFactory())
    url = f"/api/v1/subjects/{subject.id}/comments"
    posted = author.post(
        url, {"body": "direct"}, format="json", REMOTE_ADDR="203.0.113.7", HTTP_X_FORWARDED_FOR="198.51.100.1"
    )
    assert CommentContent.objects.get(comment_id=posted.json()["id"]).author_ip == "203.0.113.7"


def test_behind_trusted_proxies_the_client_is_the_address_the_outermost_proxy_saw(settings, client_for, subject):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    author = client_for(UserFactory())
    url = f"/api/v1/subjects/{subject.id}/comments"
    # The client wrote the first entry; nginx appended (or replaced the header with) what it saw.
    posted = author.post(
        url, {"body": "via nginx"}, format="json", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="6.6.6.6, 198.51.100.1"
    )
    assert CommentContent.objects.get(comment_id=posted.json()["id"]).author_ip == "198.51.100.1"
    # A proxy count that does not match the proxies yields garbage, which is not kept (nor a 500).
    garbage = author.post(
        url, {"body": "misconfigured"}, format="json", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="not-an-address"
    )
    assert garbage.status_code == 201
    assert CommentContent.objects.get(comment_id=garbage.json()["id"]).author_ip is None


def test_session_clients_need_the_csrf_token(subject):
    user = UserFactory()
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    url = f"/api/v1/subjects/{subject.id}/comments"
    refused = client.post(url, {"body": "no token"}, format="json")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "permission_denied"
    token = client.get("/api/v1/auth/csrf").json()["csrf_token"]
    assert client.cookies.get("csrftoken") is not None
    accepted = client.post(url, {"body": "with token"}, format="json", HTTP_X_CSRFTOKEN=token)
    assert accepted.status_code == 201, accepted.content


def test_seed_demo_builds_every_mode_with_the_moderation_pipeline_on(db):
    """The README's first command runs it: the demo's many similar comments must all publish;
    only the few it writes for the review queue wait there."""
    from io import StringIO

    from django.core.management import call_command

    from comments.models import Comment, Subject

    out = StringIO()
    call_command("seed_demo", stdout=out)
    modes = dict(Subject.objects.filter(site__key="demo").values_list("key", "mode"))
    assert set(modes.values()) == {"flat", "two_level", "stacked"}
    held = set(Comment.objects.exclude(status="published").values_list("pk", flat=True))
    assert 0 < len(held) <= 5
    chain_end = Comment.objects.filter(subject__key="article:stacked").order_by("-depth").first()
    assert chain_end.depth == 99
    assert "/api/v1/docs/" in out.getvalue()


@pytest.mark.parametrize("live_state", ["redis_url", "no_redis"])
def test_after_seed_demo_the_review_queue_holds_a_handful_of_tasks_not_one_per_comment(
    request, live_state, db, django_capture_on_commit_callbacks
):
    """The seed writes hundreds of comments by a dozen users in seconds; the second check of
    each (on commit: a task each without Redis, queued for the beat task with it) must not
    take that for a burst. The queue shows the few examples the seed writes for it."""
    from io import StringIO

    from django.core.management import call_command

    from comments.models import Comment
    from moderation import rechecks
    from moderation.models import ReviewTask

    request.getfixturevalue(live_state)
    with django_capture_on_commit_callbacks(execute=True):
        call_command("seed_demo", stdout=StringIO())
    rechecks.rechecks_run_queued()
    assert Comment.objects.filter(subject__site__key="demo").count() > 400
    reasons = [task.reasons for task in ReviewTask.objects.filter(site__key="demo", state="open")]
    assert 3 <= len(reasons) <= 8, reasons
    assert not [r for r in reasons if "spam:burst" in r]
    kinds = {reason.split(":")[0] for task_reasons in reasons for reason in task_reasons}
    assert kinds == {"report", "spam"}


def test_rundemo_on_another_host_port_lets_that_port_frame_the_widget(db, monkeypatch):
    """The demo site allowed only :8001, so a host page on any other port got a refused frame."""
    import re
    from io import StringIO

    from django.core.management import call_command
    from django.test import Client

    from comments.models import Subject
    from demo.management.commands import rundemo

    from ..factories import SiteFactory, SubjectFactory

    site = SiteFactory(key="demo", allowed_origins=["http://127.0.0.1:8001", "http://localhost:8001"])
    subject = SubjectFactory(site=site, key="article:x", url="http://127.0.0.1:8001/a/article%3Ax")
    served = []
    monkeypatch.setattr(rundemo, "call_command", lambda *args, **kwargs: served.append(args))  # not the real runserver
    out = StringIO()
    call_command("rundemo", "--host-port", "0", stdout=out)  # a free port, whichever it is
    assert served == [("runserver", "127.0.0.1:8000")]
    port = re.search(r"Demo host page: +http://127\.0\.0\.1:(\d+)/", out.getvalue()).group(1)
    assert port != "8001"
    frame_ancestors = (
        Client()
        .get("/embed/", {"site": "demo", "key": "article:x"})["Content-Security-Policy"]
        .split("frame-ancestors ")[1]
    )
    assert frame_ancestors.split() == [f"http://127.0.0.1:{port}", f"http://localhost:{port}"]
    assert f'href="http://127.0.0.1:{port}/"' in Client().get("/").content.decode()  # the front page's link follows
    # and so do the subjects' URLs (they led to the article on :8001, where nothing answers)
    assert Subject.objects.get(pk=subject.pk).url == f"http://127.0.0.1:{port}/a/article%3Ax"


def test_the_seeded_subjects_urls_lead_to_their_articles_on_the_demo_host_page(db):
    """They pointed at /<key> on the host page, which has no such page (a 404)."""
    from io import StringIO
    from urllib.parse import unquote, urlsplit
    from wsgiref.util import setup_testing_defaults

    from django.core.management import call_command

    from comments.models import Site, Subject
    from demo.management.commands.demo_host import host_app

    call_command("seed_demo", stdout=StringIO())
    site = Site.objects.get(key="demo")
    app = host_app(service="http://127.0.0.1:8000", site=site.key, secret=site.sso_secret)
    subjects = list(Subject.objects.filter(site=site))
    assert len(subjects) == 3
    for subject in subjects:
        url = urlsplit(subject.url)
        assert f"{url.scheme}://{url.netloc}" == site.allowed_origins[0]  # the host page rundemo serves
        environ = {"PATH_INFO": unquote(url.path), "QUERY_STRING": url.query}
        setup_testing_defaults(environ)
        answered = []
        page = b"".join(app(environ, lambda status, headers: answered.append(status))).decode()  # noqa: B023 - called before the loop moves on
        assert answered == ["200 OK"], subject.url
        assert f"data-key='{subject.key}'" in page


def test_the_demos_addresses_are_printed_with_the_port_served(db, monkeypatch, settings):
    """seed_demo printed :8000 whatever port rundemo served; now seed_demo prints the public
    address and rundemo the one it serves."""
    from io import StringIO

    from django.core.management import call_command

    from demo.management.commands import rundemo

    settings.COMMENTS_PUBLIC_URL = "http://127.0.0.1:9124"
    seeded = StringIO()
    call_command("seed_demo", stdout=seeded)
    assert "Comment service: http://127.0.0.1:9124/" in seeded.getvalue()
    assert ":8000" not in seeded.getvalue()

    monkeypatch.setattr(rundemo, "call_command", lambda *args, **kwargs: None)  # not the real runserver
    served = StringIO()
    call_command("rundemo", "--port", "9123", "--host-port", "0", stdout=served)
    lines = served.getvalue()
    assert "Comment service: http://127.0.0.1:9123/" in lines
    assert "  widget     http://127.0.0.1:9123/embed/?site=demo&key=" in lines
    assert ":8000" not in lines and ":9124" not in lines


def test_rundemos_emails_link_to_the_address_it_serves(db, monkeypatch, settings):
    """Links in emails are made of COMMENTS_PUBLIC_URL, never of a request's Host (issue 33,
    F12): without it set, the demo's would lead to the default address, not the one it serves."""
    from io import StringIO

    from django.core.management import call_command

    from accounts.api import link_url
    from demo.management.commands import rundemo

    from ..factories import SiteFactory

    SiteFactory(key="demo")
    monkeypatch.delenv("COMMENTS_PUBLIC_URL", raising=False)
    monkeypatch.delenv("NOTIFICATIONS_BASE_URL", raising=False)
    settings.COMMENTS_PUBLIC_URL = settings.NOTIFICATIONS_BASE_URL = "http://127.0.0.1:8000"  # undone after the test
    monkeypatch.setattr(rundemo, "call_command", lambda *args, **kwargs: None)  # not the real runserver
    call_command("rundemo", "--port", "8123", "--host-port", "0", stdout=StringIO())
    assert link_url("secret") == "http://127.0.0.1:8123/auth/email/link?token=secret"
    assert settings.NOTIFICATIONS_BASE_URL == "http://127.0.0.1:8123"
