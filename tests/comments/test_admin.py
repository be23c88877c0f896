"""The Django admin of the comment core: a site's allowed origins are edited as a list, one
origin per line, each checked as an origin, through the admin's own forms."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from comments.models import Site
from comments.origins import parse_origin

from ..factories import SiteFactory, UserFactory


@pytest.fixture
def admin_client(db):
    client = Client()
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


def site_form(site: Site, origins: str) -> dict:
    return {
        "key": site.key,
        "name": site.name,
        "allowed_origins": origins,
        "sso_secret": site.sso_secret,
        "default_mode": site.default_mode,
        "moderation": site.moderation,
        "report_threshold": site.report_threshold,
        "signin_sso": "on",
        "signin_email": "on",
        "signin_oidc": "[]",
        "guest_moderation": site.guest_moderation,
    }


def change_url(site: Site) -> str:
    return f"/admin/comments/site/{site.pk}/change/"


def test_the_site_form_shows_allowed_origins_one_per_line(admin_client):
    site = SiteFactory(allowed_origins=["https://blog.example", "http://localhost:8001"])
    page = admin_client.get(change_url(site))
    assert page.status_code == 200
    html = str(page.context["adminform"].form["allowed_origins"])
    assert html.startswith("<textarea") and "https://blog.example\nhttp://localhost:8001</textarea>" in html
    assert "One origin per line" in page.content.decode()


def test_origins_are_saved_as_a_list_written_as_browsers_send_them(admin_client):
    site = SiteFactory(allowed_origins=[])
    lines = "https://Blog.Example/\n\n  http://localhost:8001  \nhttps://blog.example:443\nhttp://[::1]:8000\n"
    response = admin_client.post(change_url(site), site_form(site, lines))

    assert response.status_code == 302, response.content.decode()[:3000]
    site.refresh_from_db()
    assert site.allowed_origins == ["https://blog.example", "http://localhost:8001", "http://[::1]:8000"]


def test_an_empty_box_allows_no_origin(admin_client):
    site = SiteFactory(allowed_origins=["https://blog.example"])
    assert admin_client.post(change_url(site), site_form(site, "  \n")).status_code == 302
    site.refresh_from_db()
    assert site.allowed_origins == []


def test_each_line_that_is_not_an_origin_is_named_and_nothing_is_saved(admin_client):
    site = SiteFactory(allowed_origins=["https://blog.example"])
    lines = "https://ok.example\nblog.example\nhttps://blog.example/comments\nftp://files.example\nhttps://user@blog.example\nhttps://blog.example:99999"
    response = admin_client.post(change_url(site), site_form(site, lines))

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors["allowed_origins"]
    assert len(errors) == 5
    for bad in (
        "blog.example",
        "https://blog.example/comments",
        "ftp://files.example",
        "https://user@blog.example",
        "https://blog.example:99999",
    ):
        assert any(f"“{bad}”" in e for e in errors), (bad, errors)
    assert "https://ok.example" not in " ".join(errors)
    assert "is not an origin" in response.content.decode()
    site.refresh_from_db()
    assert site.allowed_origins == ["https://blog.example"]


def test_a_new_site_is_added_with_its_origins(admin_client):
    response = admin_client.post(
        "/admin/comments/site/add/",
        {
            "key": "newblog",
            "name": "New blog",
            "allowed_origins": "https://new.example\nhttps://www.new.example",
            "sso_secret": "s3cret",
            "default_mode": "flat",
            "moderation": "post",
            "report_threshold": 3,
            "guest_moderation": "pre",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    assert Site.objects.get(key="newblog").allowed_origins == ["https://new.example", "https://www.new.example"]


@pytest.mark.parametrize(
    "text, origin",
    [
        ("https://blog.example", "https://blog.example"),
        ("HTTPS://BLOG.EXAMPLE/", "https://blog.example"),
        ("http://blog.example:80", "http://blog.example"),
        ("http://blog.example:8080", "http://blog.example:8080"),
        ("http://127.0.0.1:8001", "http://127.0.0.1:8001"),
    ],
)
def test_an_origin_is_written_as_a_browser_sends_it(text, origin):
    assert parse_origin(text) == origin


@pytest.mark.parametrize(
    "text",
    [
        "",
        "blog.example",
        "//blog.example",
        "https://",
        "https://blog.example/path",
        "https://blog.example?x=1",
        "https://blog.example#top",
        "https://a:b@blog.example",
        "https://blog.example:0",
        "https://blog.example:x",
        "https://blog_example.com",
        "javascript:alert(1)",
        "*",
    ],
)
def test_what_is_not_an_origin_is_refused_with_a_sentence(text):
    with pytest.raises(ValueError, match="is not an origin"):
        parse_origin(text)


def test_create_site_checks_its_origins_the_same_way(db):
    with pytest.raises(CommandError, match="without a path"):
        call_command("create_site", "cmdblog", "--name", "Cmd blog", "--origin", "https://cmd.example/blog")
    call_command("create_site", "cmdblog", "--name", "Cmd blog", "--origin", "https://Cmd.Example/")
    assert Site.objects.get(key="cmdblog").allowed_origins == ["https://cmd.example"]


def test_the_site_form_sets_the_sign_in_methods(admin_client):
    site = SiteFactory(allowed_origins=["https://blog.example"])
    form = site_form(site, "https://blog.example")
    del form["signin_email"]  # an unticked box
    form["signin_guests"] = "on"
    form["guest_moderation"] = "post"
    assert admin_client.post(change_url(site), form).status_code == 302
    site.refresh_from_db()
    assert (site.signin_sso, site.signin_email, site.signin_guests, site.signin_oidc) == (True, False, True, [])
    assert site.guest_moderation == "post"


def test_the_site_form_refuses_an_oidc_provider_the_service_does_not_have(admin_client):
    site = SiteFactory(allowed_origins=["https://blog.example"])
    response = admin_client.post(
        change_url(site), {**site_form(site, "https://blog.example"), "signin_oidc": '["nowhere"]'}
    )
    assert response.status_code == 200
    assert "Not a provider of this service: nowhere." in response.context["adminform"].form.errors["signin_oidc"][0]
    site.refresh_from_db()
    assert site.signin_oidc == []


def test_create_site_takes_the_sign_in_methods(db):
    call_command("create_site", "signinblog", "--name", "Blog")
    site = Site.objects.get(key="signinblog")
    assert (site.signin_sso, site.signin_email, site.signin_guests) == (True, True, False)
    assert site.guest_moderation == "pre"
    call_command(
        "create_site", "signinblog", "--name", "Blog", "--signin", "email,guests", "--guest-moderation", "post"
    )
    site.refresh_from_db()
    assert (site.signin_sso, site.signin_email, site.signin_guests, site.guest_moderation) == (
        False,
        True,
        True,
        "post",
    )
    with pytest.raises(CommandError, match="not password"):
        call_command("create_site", "signinblog", "--name", "Blog", "--signin", "email,password")


def test_create_site_takes_the_services_providers(db, settings):
    settings.ACCOUNTS_OIDC_PROVIDERS = {"github": {"kind": "github", "name": "GitHub", "client_id": "c", "secret": "s"}}
    call_command("create_site", "oidcblog", "--name", "Blog", "--signin", "email,github", "--link-email")
    site = Site.objects.get(key="oidcblog")
    assert (site.signin_sso, site.signin_email, site.signin_oidc, site.signin_link_email) == (
        False,
        True,
        ["github"],
        True,
    )
    with pytest.raises(CommandError, match="not google"):
        call_command("create_site", "oidcblog", "--name", "Blog", "--signin", "google")
