"""A user's data: everything about them as JSON (the API for themself, the admin and a
command for staff), and its erasure with every count kept right (on both like stores)."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command

from comments import services as comment_services
from comments.models import Comment, CommentContent, ExternalIdentity, Follow, Status, User
from comments.services import subject_reconcile_counters
from likes.models import Like
from likes.services import like_counts_reconcile, like_set, likes_flush
from moderation.models import AuditEntry, Report, Sanction
from moderation.services import report_create, sanction_create
from portability import services
from portability.models import SitePrivacy

from ..api.conftest import API, assert_error
from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory

DATA = f"{API}/me/data"


@pytest.fixture
def world(db):
    """A site where ``person`` wrote comments (one with a reply under it), liked others'
    comments, reported one, was sanctioned on another site, follows and is followed, signed in
    by SSO; and others liked the person's comments."""
    site = SiteFactory(key="main")
    elsewhere = SiteFactory(key="elsewhere")
    moderator = UserFactory(username="moderator")
    site.moderators.add(moderator)
    elsewhere.moderators.add(moderator)
    person = comment_services.sso_user_upsert(site=site, external_id="u-7", name="Person", email="p@example.com")
    other, third = UserFactory(username="other"), UserFactory(username="third")
    subject = SubjectFactory(site=site)
    top = CommentFactory(subject=subject, author=other, body="other's top comment")
    mine = comment_services.comment_create(
        subject=subject,
        author=person,
        body="my reply, with replies",
        reply_to_id=top.pk,
        author_ip="198.51.100.23",
        user_agent="Mozilla/5.0 (person)",
    )
    answer = CommentFactory(subject=subject, author=third, body="an answer to the person", reply_to=mine)
    alone = comment_services.comment_create(
        subject=subject, author=person, body="my lonely comment", author_ip="198.51.100.23"
    )
    report_create(comment=comment_services_ref(answer), reporter=person, reason="abuse", detail="rude")
    sanction_create(actor=moderator, site=elsewhere, user_id=person.pk, kind="shadow_ban", reason="noise")
    Follow.objects.create(follower=person, followee=other)
    Follow.objects.create(follower=third, followee=person)
    return {
        "site": site,
        "subject": subject,
        "person": person,
        "other": other,
        "third": third,
        "top": top,
        "mine": mine,
        "answer": answer,
        "alone": alone,
        "moderator": moderator,
    }


def comment_services_ref(comment):
    from comments.queries import comment_ref_for_viewer

    return comment_ref_for_viewer(comment_id=comment.pk, user=None)


def likes_in(world):
    """The person likes two comments of others (one like flushed to the rows, one still only in
    Redis when there is Redis); others like the person's two comments."""
    like_set(comment_id=world["top"].pk, user=world["person"], liked=True)
    likes_flush()
    like_set(comment_id=world["answer"].pk, user=world["person"], liked=True)
    like_set(comment_id=world["mine"].pk, user=world["other"], liked=True)
    like_set(comment_id=world["alone"].pk, user=world["other"], liked=True)
    like_set(comment_id=world["alone"].pk, user=world["third"], liked=True)


def api_like_count(client, comment) -> int:
    return client.get(f"{API}/comments/{comment.pk}").json()["like_count"]


# --- export -------------------------------------------------------------------------------------


def test_my_data_needs_a_signed_in_user(api, db):
    assert_error(api.get(DATA), 401, "not_authenticated")
    assert_error(api.delete(DATA), 401, "not_authenticated")


def test_my_data_holds_everything_about_me(world, client_for, no_redis):
    likes_in(world)
    person = world["person"]
    response = client_for(person).get(DATA)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    data = json.loads(b"".join(response.streaming_content))
    assert data["format"] == "comments-user-data" and data["user"]["id"] == person.pk
    assert data["user"]["name"] == "Person"
    assert data["identities"] == [
        {
            "site": "main",
            "external_id": "u-7",
            "email": "p@example.com",
            "created_at": data["identities"][0]["created_at"],
        }
    ]
    mine = {c["body"]: c for c in data["comments"]}
    assert set(mine) == {"my reply, with replies", "my lonely comment"}
    reply = mine["my reply, with replies"]
    assert reply["ip"] == "198.51.100.23" and reply["user_agent"] == "Mozilla/5.0 (person)"
    assert reply["subject"]["key"] == world["subject"].key and reply["reply_to_id"] == world["top"].pk
    assert {like["comment_id"] for like in data["likes"]} == {world["top"].pk, world["answer"].pk}
    assert data["reports"][0]["detail"] == "rude" and data["sanctions"][0]["kind"] == "shadow_ban"
    assert [f["user"]["id"] for f in data["following"]] == [world["other"].pk]
    assert [f["user"]["id"] for f in data["followers"]] == [world["third"].pk]
    assert len(data["tokens"]) == 1 and set(data["tokens"][0]) == {"site", "created_at", "expires_at"}
    assert AuditEntry.objects.filter(action="user_data_export", actor=person).count() == 2  # main and elsewhere


def test_the_export_reads_a_page_of_rows_at_a_time(world, django_assert_max_num_queries):
    from portability import queries

    for n in range(30):
        CommentFactory(subject=world["subject"], author=world["person"], body=f"more {n}")
    with django_assert_max_num_queries(16):
        data = json.loads(b"".join(queries.user_data_export(user=world["person"])))
    assert len(data["comments"]) == 32


def test_staff_export_a_users_data_by_command(world, tmp_path):
    path = tmp_path / "person.json"
    call_command("export_user_data", world["person"].username, "-o", str(path))
    assert json.loads(path.read_bytes())["user"]["id"] == world["person"].pk
    assert AuditEntry.objects.filter(action="user_data_export", actor=None).count() == 2


# --- erasure ------------------------------------------------------------------------------------


def test_erasure_keeps_comments_as_placeholders_and_every_count_right(world, client_for, like_store):
    likes_in(world)
    person, reader = world["person"], client_for(world["other"])
    assert api_like_count(reader, world["answer"]) == 1
    token_client = client_for(person)

    report = services.user_erase(user=person, actor=person)

    assert report.likes_removed == 2 and report.comments_kept_as_placeholders == 2 and report.comments_removed == 0
    # The person's likes: gone from what readers see at once, and from the rows.
    assert api_like_count(reader, world["top"]) == 0 and api_like_count(reader, world["answer"]) == 0
    likes_flush()  # a like that waited in Redis is older than the withdrawal: dropped
    assert api_like_count(reader, world["answer"]) == 0
    assert Comment.objects.get(pk=world["answer"].pk).like_count == 0
    assert not Like.objects.filter(user=person, active=True).exists()
    assert like_counts_reconcile() == 0
    assert subject_reconcile_counters(subject_id=world["subject"].pk).fixed_comments == 0
    # The person's comments: deleted placeholders with nothing of the person left.
    for comment in (world["mine"], world["alone"]):
        row = Comment.objects.get(pk=comment.pk)
        content = CommentContent.objects.get(pk=comment.pk)
        assert (row.status, row.author_id) == (Status.DELETED, None)
        assert (content.body, content.html, content.author_ip, content.user_agent) == ("", "", None, "")
    items = reader.get(f"{API}/subjects/{world['subject'].pk}/comments", {"mode": "flat"}).json()["items"]
    assert [i["id"] for i in items] == [
        world["top"].pk,
        world["mine"].pk,
        world["answer"].pk,
    ]  # a placeholder keeps the tree
    assert items[1]["body"] == "" and items[1]["author"] is None
    # The account: closed, anonymous, without identities, reports or follows.
    person.refresh_from_db()
    assert (person.is_active, person.username, person.display_name, person.email) == (
        False,
        f"erased-{person.pk}",
        "",
        "",
    )
    assert not person.has_usable_password()
    assert_error(token_client.get(f"{API}/me"), 401, "not_authenticated")
    assert not ExternalIdentity.objects.filter(user=person).exists()
    assert not Report.objects.filter(user=person).exists() and not Follow.objects.filter(follower=person).exists()
    assert Sanction.objects.filter(user=person).exists()  # a moderator's record, naming no one now
    assert set(AuditEntry.objects.filter(action="user_erase").values_list("site__key", flat=True)) == {
        "main",
        "elsewhere",
    }


def test_erasure_removes_comments_nothing_hangs_under_where_the_site_says_so(world, client_for, like_store):
    likes_in(world)
    SitePrivacy.objects.create(site=world["site"], erasure="remove")
    report = services.user_erase(user=world["person"], actor=None)
    assert (report.comments_kept_as_placeholders, report.comments_removed) == (1, 1)
    assert not Comment.objects.filter(pk=world["alone"].pk).exists()  # and its two likes with it
    assert Comment.objects.get(pk=world["mine"].pk).status == Status.DELETED  # a reply hangs under it
    assert not Like.objects.filter(comment_id=world["alone"].pk).exists()
    likes_flush()
    assert like_counts_reconcile() == 0
    assert subject_reconcile_counters(subject_id=world["subject"].pk).fixed_comments == 0
    subject = world["subject"]
    subject.refresh_from_db()
    assert (subject.comment_count, subject.root_count) == (2, 1)


def test_erasing_twice_changes_nothing_more(world, like_store):
    likes_in(world)
    services.user_erase(user=world["person"], actor=None)
    again = services.user_erase(user=User.objects.get(pk=world["person"].pk), actor=None)
    assert (again.likes_removed, again.comments_kept_as_placeholders, again.comments_removed) == (0, 0, 0)


def test_i_can_erase_my_own_data_through_the_api(world, client_for, no_redis):
    client = client_for(world["person"])
    response = client.delete(DATA)
    assert response.status_code == 200
    assert response.json()["erased"]["comments_kept_as_placeholders"] == 2
    assert_error(client.get(DATA), 401, "not_authenticated")


def test_the_user_data_endpoints_are_in_the_openapi_schema(api, db):
    schema = api.get(f"{API}/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operations = schema["paths"]["/api/v1/me/data"]
    assert set(operations) >= {"get", "delete"}
    assert operations["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/UserDataOut"
    )
    fields = schema["components"]["schemas"]["UserDataOut"]["properties"]
    assert {"user", "identities", "comments", "likes", "reports", "sanctions", "following", "followers"} <= set(fields)


# --- the admin ----------------------------------------------------------------------------------


@pytest.fixture
def admin_client(client, db):
    staff = UserFactory(username="root", is_staff=True, is_superuser=True)
    client.force_login(staff)
    return client


def test_staff_download_and_erase_a_users_data_in_the_admin(world, admin_client, no_redis):
    url = "/admin/comments/user/"
    person = world["person"]
    download = admin_client.post(url, {"action": "download_data", "_selected_action": [person.pk]})
    assert json.loads(b"".join(download.streaming_content))["user"]["id"] == person.pk
    confirm = admin_client.post(url, {"action": "erase_data", "_selected_action": [person.pk]})
    assert b"cannot be undone" in confirm.content
    assert User.objects.get(pk=person.pk).is_active  # not before it is confirmed
    admin_client.post(url, {"action": "erase_data", "_selected_action": [person.pk], "confirmed": "yes"})
    assert not User.objects.get(pk=person.pk).is_active
    assert Comment.objects.get(pk=world["alone"].pk).status == Status.DELETED
