"""Importing by upload in the admin."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from comments.models import Comment, Subject
from portability.models import ImportRun

from ..factories import SiteFactory, UserFactory
from .conftest import fixture_path

ADD = "/admin/portability/importrun/add/"


@pytest.fixture
def staff_client(client, db):
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


def upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


def test_staff_import_an_export_by_upload_and_see_its_summary(staff_client):
    site = SiteFactory(key="blog")
    assert b"Import comments" in staff_client.get(ADD).content
    with open(fixture_path("disqus.xml"), "rb") as export:
        response = staff_client.post(
            ADD, {"site": site.pk, "format": "disqus", "file": upload("export.xml", export.read())}
        )
    run = ImportRun.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(f"/importrun/{run.pk}/change/")
    assert Comment.objects.filter(subject__site=site).count() == 9
    page = staff_client.get(response["Location"]).content.decode()
    assert "9 comments imported" in page and "bad or missing date" in page
    assert "export.xml" in staff_client.get("/admin/portability/importrun/").content.decode()


def test_an_upload_that_cannot_be_read_says_why_and_imports_nothing(staff_client):
    site = SiteFactory(key="blog")
    response = staff_client.post(ADD, {"site": site.pk, "format": "wordpress", "file": upload("x.xml", b"<disqus/>")})
    assert response.status_code == 200
    assert "Nothing imported: this is not a WordPress export" in response.content.decode()
    assert not Comment.objects.exists()


def test_an_upload_takes_url_remaps_and_the_key_choice_and_its_run_keeps_them(staff_client):
    site = SiteFactory(key="moved")
    with open(fixture_path("disqus-moved.xml"), "rb") as export:
        response = staff_client.post(
            ADD,
            {
                "site": site.pk,
                "format": "disqus",
                "file": upload("export.xml", export.read()),
                "map_url": "https://old.example.com/=https://example.com/\r\n"
                "https://old.example.com/blog/=https://example.com/posts/\r\n",
                "key_from": "path",
            },
        )
    run = ImportRun.objects.get()
    assert response.status_code == 302
    assert run.options == {
        "map_url": [
            "https://old.example.com/=https://example.com/",
            "https://old.example.com/blog/=https://example.com/posts/",
        ],
        "key_from": "path",
    }
    notes = Subject.objects.get(site=site, key="/posts/2020/notes/")
    assert notes.url == "https://example.com/posts/2020/notes/?utm_source=feed"
    page = staff_client.get(response["Location"]).content.decode()
    assert "keys from: path" in page and "--map-url https://old.example.com/blog/=https://example.com/posts/" in page


def test_an_upload_with_a_bad_remap_says_why_and_imports_nothing(staff_client):
    site = SiteFactory(key="moved")
    with open(fixture_path("disqus-moved.xml"), "rb") as export:
        response = staff_client.post(
            ADD,
            {
                "site": site.pk,
                "format": "disqus",
                "file": upload("x.xml", export.read()),
                "map_url": "https://old/=/new/",
            },
        )
    assert response.status_code == 200
    assert "the new address must be an http:// or https:// URL" in response.content.decode()
    assert not Comment.objects.exists() and not ImportRun.objects.exists()


def test_site_privacy_settings_are_edited_in_the_admin(staff_client):
    site = SiteFactory(key="blog")
    staff_client.post("/admin/portability/siteprivacy/add/", {"site": site.pk, "erasure": "remove"})
    assert site.privacy.erasure == "remove"
