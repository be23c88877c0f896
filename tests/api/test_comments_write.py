"""API.md, Comments: posting, editing and deleting."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from comments import services
from comments.models import Comment

from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory
from .conftest import API, assert_comment_shape, assert_error, assert_iso_time


def parse_tags(html: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """The start tags of ``html`` with their attributes (escaped text is not a tag)."""
    from html.parser import HTMLParser

    found = []

    class Collector(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, attrs))

        handle_startendtag = handle_starttag

    Collector().feed(html)
    return found


def post(client, subject, payload):
    return client.post(f"{API}/subjects/{subject.pk}/comments", payload, format="json")


# --- posting -------------------------------------------------------------------------------


def test_posting_a_comment_returns_201_with_the_full_comment_object(client_for, user, subject):
    response = post(client_for(user), subject, {"body": "Hello **world**"})
    assert response.status_code == 201, response.content
    item = response.json()
    assert_comment_shape(item)
    assert item["subject_id"] == subject.pk
    assert (item["reply_to_id"], item["root_id"], item["reply_to"], item["depth"], item["floor"]) == (
        None,
        None,
        None,
        0,
        1,
    )
    assert item["author"] == {"id": user.pk, "name": user.public_name, "avatar": None}
    assert item["body"] == "Hello **world**"
    assert "<strong>world</strong>" in item["html"]
    assert (item["status"], item["visibility"]) == ("published", "public")
    assert (item["pinned"], item["featured"], item["like_count"], item["liked"], item["reply_count"]) == (
        False,
        False,
        0,
        False,
        0,
    )
    assert item["edited_at"] is None
    created = assert_iso_time(item["created_at"])
    assert abs((timezone.now() - created).total_seconds()) < 60
    assert Comment.objects.filter(pk=item["id"], subject=subject).exists()


def test_a_reply_names_its_target_its_thread_and_its_floor_in_the_thread(client_for, user, other_user, subject):
    root = CommentFactory(subject=subject, author=other_user)
    CommentFactory(subject=subject, author=other_user)  # another thread: floors are per thread
    first = post(client_for(user), subject, {"body": "first reply", "reply_to_id": root.pk})
    assert first.status_code == 201, first.content
    item = first.json()
    assert_comment_shape(item)
    assert (item["reply_to_id"], item["root_id"], item["depth"], item["floor"]) == (root.pk, root.pk, 1, 1)
    assert item["reply_to"] == {
        "id": root.pk,
        "author": {"id": other_user.pk, "name": other_user.public_name, "avatar": None},
    }

    deeper = post(client_for(other_user), subject, {"body": "reply to the reply", "reply_to_id": item["id"]}).json()
    assert (deeper["reply_to_id"], deeper["root_id"], deeper["depth"], deeper["floor"]) == (item["id"], root.pk, 2, 2)
    assert deeper["reply_to"]["author"]["id"] == user.pk


def test_top_level_floors_count_up_per_subject_and_are_never_reused(client_for, user, subject):
    client = client_for(user)
    floors = [post(client, subject, {"body": f"c{i}"}).json() for i in range(3)]
    assert [c["floor"] for c in floors] == [1, 2, 3]
    assert client.delete(f"{API}/comments/{floors[2]['id']}").status_code == 204
    assert post(client, subject, {"body": "after delete"}).json()["floor"] == 4
    other = SubjectFactory(site=subject.site)
    assert post(client, other, {"body": "elsewhere"}).json()["floor"] == 1


def test_a_body_of_exactly_5000_characters_is_accepted(client_for, user, subject):
    response = post(client_for(user), subject, {"body": "a" * 5000})
    assert response.status_code == 201
    assert response.json()["body"] == "a" * 5000


@pytest.mark.parametrize(
    "body",
    ["", " ", "   \n\t  ", "\u3000", "a" * 5001, "a\x00b", "\x00"],
    ids=["empty", "space", "whitespace", "ideographic-space", "5001", "nul-inside", "nul"],
)
def test_an_empty_whitespace_only_too_long_or_nul_body_is_invalid(client_for, user, subject, body):
    error = assert_error(post(client_for(user), subject, {"body": body}), 400, "invalid")
    assert "body" in error.get("fields", {}), error
    assert not Comment.objects.filter(subject=subject).exists()


@pytest.mark.parametrize("body", [12, 1.5, ["text"], {"text": "x"}, None, True], ids=repr)
def test_a_body_of_the_wrong_type_is_invalid(client_for, user, subject, body):
    error = assert_error(post(client_for(user), subject, {"body": body}), 400, "invalid")
    assert "body" in error.get("fields", {}), error


def test_a_missing_body_is_invalid(client_for, user, subject):
    assert_error(post(client_for(user), subject, {"reply_to_id": None}), 400, "invalid")


@pytest.mark.parametrize("reply_to_id", ["12", True, False, 1.0, [1], {"id": 1}, 0, -5, 2**53, 2**64], ids=repr)
def test_a_reply_to_id_of_the_wrong_type_or_range_is_invalid(client_for, user, subject, reply_to_id):
    root = CommentFactory(subject=subject, author=user)
    if reply_to_id == "12":
        reply_to_id = str(root.pk)
    error = assert_error(post(client_for(user), subject, {"body": "x", "reply_to_id": reply_to_id}), 400, "invalid")
    assert "reply_to_id" in error.get("fields", {}), error


def test_a_null_reply_to_id_posts_a_top_level_comment(client_for, user, subject):
    response = post(client_for(user), subject, {"body": "x", "reply_to_id": None})
    assert response.status_code == 201
    assert response.json()["reply_to_id"] is None


def test_a_reply_to_another_subjects_comment_is_invalid(client_for, user, subject):
    elsewhere = CommentFactory(subject=SubjectFactory(site=subject.site), author=user)
    error = assert_error(post(client_for(user), subject, {"body": "x", "reply_to_id": elsewhere.pk}), 400, "invalid")
    assert "reply_to_id" in error.get("fields", {})


def test_a_reply_to_an_unknown_comment_is_not_found(client_for, user, subject):
    assert_error(post(client_for(user), subject, {"body": "x", "reply_to_id": 123456789}), 404, "not_found")


def test_a_reply_to_a_comment_the_user_may_not_see_is_not_found(client_for, user, other_user, subject):
    hidden = CommentFactory(subject=subject, author=other_user)
    services.comment_set_status(comment_id=hidden.pk, to_status="pending")
    assert_error(post(client_for(user), subject, {"body": "x", "reply_to_id": hidden.pk}), 404, "not_found")


def test_posting_to_a_closed_subject_is_refused_as_subject_closed(client_for, user, subject, moderator):
    services.subject_update(subject=subject, actor=moderator, state="closed")
    assert_error(post(client_for(user), subject, {"body": "x"}), 403, "subject_closed")
    assert not Comment.objects.filter(subject=subject).exists()


def test_posting_anonymously_is_not_authenticated(api, subject):
    assert_error(post(api, subject, {"body": "x"}), 401, "not_authenticated")


def test_posting_to_an_unknown_subject_is_not_found(client_for, user, db):
    assert_error(
        client_for(user).post(f"{API}/subjects/424242/comments", {"body": "x"}, format="json"), 404, "not_found"
    )


@pytest.mark.parametrize("visibility", ["secret", "", 1, None])
def test_an_unknown_visibility_is_invalid(client_for, user, subject, visibility):
    assert_error(post(client_for(user), subject, {"body": "x", "visibility": visibility}), 400, "invalid")


def test_a_friends_only_comment_is_posted_with_its_visibility(client_for, user, subject):
    response = post(client_for(user), subject, {"body": "x", "visibility": "friends"})
    assert response.status_code == 201
    assert response.json()["visibility"] == "friends"


@pytest.mark.parametrize(
    "extra",
    [
        {"reply_to": 1},  # a typo of reply_to_id: answered 201 as a top-level comment, before
        {"status": "rejected", "pinned": True, "like_count": 99, "author": {"id": 1}, "id": 5},
    ],
)
def test_a_field_the_endpoint_does_not_take_is_refused_by_name_and_nothing_is_stored(client_for, user, subject, extra):
    response = post(client_for(user), subject, {"body": "x", **extra})
    assert_error(response, 400, "invalid")
    assert response.json()["error"]["fields"] == {name: ["Unknown field."] for name in extra}
    assert not Comment.objects.filter(subject=subject).exists()


def test_every_body_the_api_takes_refuses_unknown_fields(client_for, user, subject):
    """Each write's body, as the schema says (additionalProperties: false)."""
    client = client_for(user)
    comment = CommentFactory(subject=subject, author=user)
    for method, url in [
        ("post", "/api/v1/auth/token"),
        ("post", "/api/v1/subjects"),
        ("patch", f"/api/v1/subjects/{subject.pk}"),
        ("patch", f"/api/v1/comments/{comment.pk}"),
        ("post", f"/api/v1/comments/{comment.pk}/reports"),
        ("post", "/api/v1/notifications/read_all"),
        ("patch", "/api/v1/notifications/preferences"),
        ("post", "/api/v1/guest/comments"),
        ("post", "/api/v1/auth/email"),
    ]:
        response = getattr(client, method)(url, {"surplus": 1}, format="json")
        assert response.status_code == 400, (method, url, response.status_code)
        assert response.json()["error"]["fields"].get("surplus") == ["Unknown field."], (method, url)


def test_html_is_sanitized_and_links_are_marked_nofollow(client_for, user, subject):
    body = (
        "<script>alert(1)</script> <img src=x onerror=alert(2)> "
        "[bad](javascript:alert(3)) [good](https://example.com/page) "
        '<a href="https://x.example" onclick="alert(4)">raw</a>'
    )
    item = post(client_for(user), subject, {"body": body}).json()
    tags = parse_tags(item["html"])
    names = [name for name, _ in tags]
    assert "script" not in names and "img" not in names
    for name, attrs in tags:
        for attr, value in attrs:
            assert not attr.startswith("on"), (name, attr)
            if attr == "href":
                assert not (value or "").strip().lower().startswith("javascript:"), value
    links = [dict(attrs) for name, attrs in tags if name == "a"]
    assert any(link.get("href") == "https://example.com/page" for link in links), links
    for link in links:
        assert link.get("rel") == "nofollow ugc noopener", link
    assert item["body"] == body


def test_posting_to_a_pre_moderated_site_gives_a_pending_comment_the_author_sees(client_for, user, api):
    subject = SubjectFactory(site=SiteFactory(key="premoderated", moderation="pre"))
    response = post(client_for(user), subject, {"body": "x"})
    assert response.status_code == 201
    assert response.json()["status"] == "pending"
    assert_error(api.get(f"{API}/comments/{response.json()['id']}"), 404, "not_found")


# --- reading one -----------------------------------------------------------------------------


def test_a_comment_is_readable_by_id(api, user, subject):
    comment = CommentFactory(subject=subject, author=user, body="Readable")
    response = api.get(f"{API}/comments/{comment.pk}")
    assert response.status_code == 200
    item = response.json()
    assert_comment_shape(item)
    assert (item["id"], item["body"], item["author"]["id"]) == (comment.pk, "Readable", user.pk)


def test_an_unknown_comment_is_not_found(api, db):
    assert_error(api.get(f"{API}/comments/1234567"), 404, "not_found")


# --- editing -------------------------------------------------------------------------------


def test_the_author_edits_within_the_window_and_html_is_rerendered(client_for, user, subject):
    comment = CommentFactory(subject=subject, author=user, body="before")
    response = client_for(user).patch(f"{API}/comments/{comment.pk}", {"body": "after *now*"}, format="json")
    assert response.status_code == 200, response.content
    item = response.json()
    assert_comment_shape(item)
    assert item["body"] == "after *now*"
    assert "<em>now</em>" in item["html"] and "before" not in item["html"]
    edited = assert_iso_time(item["edited_at"])
    assert abs((timezone.now() - edited).total_seconds()) < 60
    fetched = client_for(user).get(f"{API}/comments/{comment.pk}").json()
    assert fetched["body"] == "after *now*" and fetched["edited_at"] is not None


def test_someone_else_may_not_edit_a_comment(client_for, user, other_user, subject):
    comment = CommentFactory(subject=subject, author=user, body="mine")
    assert_error(
        client_for(other_user).patch(f"{API}/comments/{comment.pk}", {"body": "theirs"}, format="json"),
        403,
        "permission_denied",
    )
    assert client_for(user).get(f"{API}/comments/{comment.pk}").json()["body"] == "mine"


def test_a_moderator_may_not_edit_someone_elses_comment_text(client_for, user, moderator, subject):
    comment = CommentFactory(subject=subject, author=user, body="mine")
    assert_error(
        client_for(moderator).patch(f"{API}/comments/{comment.pk}", {"body": "theirs"}, format="json"),
        403,
        "permission_denied",
    )


def test_the_author_may_not_edit_after_the_window(client_for, user, subject):
    comment = CommentFactory(subject=subject, author=user, body="old")
    Comment.objects.filter(pk=comment.pk).update(created_at=timezone.now() - timedelta(seconds=901))
    assert_error(
        client_for(user).patch(f"{API}/comments/{comment.pk}", {"body": "new"}, format="json"), 403, "permission_denied"
    )
    assert client_for(user).get(f"{API}/comments/{comment.pk}").json()["body"] == "old"


def test_the_edit_window_follows_the_setting(client_for, user, subject, settings):
    comment = CommentFactory(subject=subject, author=user, body="old")
    Comment.objects.filter(pk=comment.pk).update(created_at=timezone.now() - timedelta(seconds=120))
    settings.COMMENTS_EDIT_WINDOW = 60
    assert_error(
        client_for(user).patch(f"{API}/comments/{comment.pk}", {"body": "new"}, format="json"), 403, "permission_denied"
    )
    settings.COMMENTS_EDIT_WINDOW = 3600
    assert client_for(user).patch(f"{API}/comments/{comment.pk}", {"body": "new"}, format="json").status_code == 200


def test_editing_anonymously_is_not_authenticated(api, user, subject):
    comment = CommentFactory(subject=subject, author=user)
    assert_error(api.patch(f"{API}/comments/{comment.pk}", {"body": "x"}, format="json"), 401, "not_authenticated")


@pytest.mark.parametrize("body", ["", "   ", "a" * 5001, 5, None, ["x"], "a\x00"], ids=repr)
def test_an_edit_with_a_bad_body_is_invalid(client_for, user, subject, body):
    comment = CommentFactory(subject=subject, author=user, body="kept")
    assert_error(client_for(user).patch(f"{API}/comments/{comment.pk}", {"body": body}, format="json"), 400, "invalid")
    assert client_for(user).get(f"{API}/comments/{comment.pk}").json()["body"] == "kept"


def test_editing_a_deleted_comment_is_refused(client_for, user, subject):
    comment = CommentFactory(subject=subject, author=user)
    CommentFactory(subject=subject, reply_to=comment)  # keeps it visible as a placeholder
    services.comment_set_status(comment_id=comment.pk, to_status="deleted")
    response = client_for(user).patch(f"{API}/comments/{comment.pk}", {"body": "resurrect"}, format="json")
    assert response.status_code in (403, 404)
    assert_error(response, response.status_code, "permission_denied" if response.status_code == 403 else "not_found")


# --- deleting ------------------------------------------------------------------------------


def test_the_author_deletes_a_comment_and_counters_drop(client_for, user, subject, api):
    comment = CommentFactory(subject=subject, author=user)
    response = client_for(user).delete(f"{API}/comments/{comment.pk}")
    assert response.status_code == 204
    assert response.content == b""
    assert Comment.objects.get(pk=comment.pk).status == "deleted"  # soft delete: the row stays
    assert_error(api.get(f"{API}/comments/{comment.pk}"), 404, "not_found")
    body = api.get(f"{API}/subjects/{subject.pk}").json()
    assert (body["comment_count"], body["root_count"]) == (0, 0)


def test_a_site_moderator_deletes_someone_elses_comment(client_for, user, moderator, subject):
    comment = CommentFactory(subject=subject, author=user)
    assert client_for(moderator).delete(f"{API}/comments/{comment.pk}").status_code == 204
    assert Comment.objects.get(pk=comment.pk).status == "deleted"


def test_another_user_may_not_delete_a_comment(client_for, user, other_user, subject):
    comment = CommentFactory(subject=subject, author=user)
    assert_error(client_for(other_user).delete(f"{API}/comments/{comment.pk}"), 403, "permission_denied")
    assert Comment.objects.get(pk=comment.pk).status == "published"


def test_a_moderator_of_another_site_may_not_delete_a_comment(client_for, user, subject):
    from ..factories import SiteFactory

    mod = UserFactory(username="elsewhere-mod")
    SiteFactory(key="elsewhere").moderators.add(mod)
    comment = CommentFactory(subject=subject, author=user)
    assert_error(client_for(mod).delete(f"{API}/comments/{comment.pk}"), 403, "permission_denied")


def test_deleting_anonymously_is_not_authenticated(api, user, subject):
    comment = CommentFactory(subject=subject, author=user)
    assert_error(api.delete(f"{API}/comments/{comment.pk}"), 401, "not_authenticated")
    assert Comment.objects.get(pk=comment.pk).status == "published"


def test_a_deleted_reply_drops_the_thread_counters(client_for, user, subject, api):
    root = CommentFactory(subject=subject, author=user)
    reply = CommentFactory(subject=subject, author=user, reply_to=root)
    assert api.get(f"{API}/comments/{root.pk}").json()["reply_count"] == 1
    assert client_for(user).delete(f"{API}/comments/{reply.pk}").status_code == 204
    assert api.get(f"{API}/comments/{root.pk}").json()["reply_count"] == 0
    assert api.get(f"{API}/subjects/{subject.pk}").json()["comment_count"] == 1
