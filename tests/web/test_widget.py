"""The widget's pages: the server-rendered embed page and its HTML fragments (issue 5)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from comments import services
from comments.avatars import avatar_path
from comments.models import Comment, Mode, Status, Subject
from comments.services import site_store
from likes import services as like_services

from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory

pytestmark = pytest.mark.django_db

HOST = "https://host.example"


@pytest.fixture
def web():
    return Client()


def embed(web, subject=None, **params):
    query = {"site": subject.site.key, "key": subject.key} if subject is not None else {}
    return web.get("/embed/", {**query, **params})


def bearer(user) -> dict:
    raw, _ = services.token_issue(user=user)
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}", "HTTP_X_FRAGMENT": "1"}


def text(response) -> str:
    return response.content.decode()


def test_embed_page_renders_the_discussion_server_side(web, subject):
    first = CommentFactory(subject=subject, body="The *first* comment")
    CommentFactory(subject=subject, reply_to=first, body="An answer")
    response = embed(web, subject)
    assert response.status_code == 200
    page = text(response)
    assert "<em>first</em> comment" in page
    assert "An answer" in page
    assert "2 comments" in page
    assert f'id="c-{first.id}"' in page
    assert re.search(r'<time datetime="\d{4}-\d\d-\d\dT[^"]+"[^>]*>now</time>', page)


def test_pictures_in_the_widget_come_from_the_service_only(web, subject):
    author = UserFactory(avatar_url="https://pictures.example/ada.png")
    CommentFactory(subject=subject, author=author)
    response = embed(web, subject)
    page = text(response)
    assert f'<img src="{avatar_path(author.pk, author.avatar_url)}"' in page
    assert "pictures.example" not in page
    assert "img-src 'self' data:;" in response["Content-Security-Policy"]


def test_embed_page_may_be_framed_only_by_the_sites_origins(web, subject):
    subject.site.allowed_origins = [HOST, "http://localhost:8001"]
    site_store(site=subject.site)
    response = embed(web, subject)
    csp = response["Content-Security-Policy"]
    assert f"frame-ancestors {HOST} http://localhost:8001" in csp
    assert "script-src 'self'" in csp and "style-src 'self'" in csp and "default-src 'self'" in csp
    assert "X-Frame-Options" not in response


def test_a_site_without_origins_may_not_be_framed_and_bad_origins_never_reach_the_header(web, subject):
    subject.site.allowed_origins = ["https://ok.example", "https://evil.example; script-src *", 42]
    site_store(site=subject.site)
    csp = embed(web, subject)["Content-Security-Policy"]
    assert csp.endswith("frame-ancestors https://ok.example")
    subject.site.allowed_origins = []
    site_store(site=subject.site)
    assert embed(web, subject)["Content-Security-Policy"].endswith("frame-ancestors 'none'")


def test_embed_page_has_no_inline_script_style_or_handlers(web, subject):
    CommentFactory(
        subject=subject, body='<script>alert(1)</script> <img src=x onerror="alert(2)"> [x](javascript:alert(3))'
    )
    page = text(embed(web, subject))
    for tag in re.findall(r"<script\b[^>]*>", page):
        assert "src=" in tag or 'type="application/json"' in tag, tag
    tags = re.findall(r"<[a-zA-Z][^>]*>", page)
    assert "&lt;script&gt;" in page  # the comment's markup is text
    assert not [t for t in tags if re.search(r"\s(style|on[a-z]+)=", t)]
    assert not [t for t in tags if "javascript:" in t]


def test_the_parent_origin_is_handed_to_the_script_only_when_allowed(web, subject):
    assert f'data-parent-origin="{HOST}"' in text(embed(web, subject, origin=HOST))
    assert 'data-parent-origin=""' in text(embed(web, subject, origin="https://evil.example"))


def test_an_unknown_subject_is_an_empty_discussion(web, site):
    response = web.get("/embed/", {"site": site.key, "key": "article:new"})
    assert response.status_code == 200
    assert "Be the first to comment" in text(response)
    assert 'data-subject=""' in text(response)


def test_an_unknown_site_is_a_clear_404_page(web):
    response = web.get("/embed/", {"site": "nope", "key": "x"})
    assert response.status_code == 404
    assert "Unknown site" in text(response)
    assert response["Content-Type"].startswith("text/html")


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"site": ""},
        {"mode": "tree"},
        {"sort": "sideways"},
        {"cursor": "garbage"},
        {"theme": "neon"},
        {"key": "k" * 300},
    ],
)
def test_bad_parameters_are_a_400_page_never_a_500(web, subject, params):
    query = {"site": subject.site.key, "key": subject.key, **params}
    if params == {}:
        query = {"site": subject.site.key}
    response = web.get("/embed/", query)
    assert response.status_code == 400, params
    assert "Invalid parameters" in text(response)


def test_hot_sort_is_refused_outside_two_level(web, subject):
    assert embed(web, subject, mode="flat", sort="hot").status_code == 400


def test_pages_are_linked_so_readers_without_javascript_see_everything(web, subject):
    for n in range(25):
        CommentFactory(subject=subject, body=f"Root {n}")
    page = text(embed(web, subject, sort="new"))
    assert "Root 24" in page and "Root 5" in page and "Root 4" not in page
    more = re.search(r'class="cw-more" href="([^"]+)"', page).group(1).replace("&amp;", "&")
    assert more.startswith("/embed/?")
    second = text(web.get(more))
    assert "Root 4" in second and "Root 0" in second and "Root 5" not in second
    assert "cw-more" not in second


def test_two_level_shows_reply_previews_and_a_link_to_all_replies(web, subject):
    root = CommentFactory(subject=subject, body="Root")
    for n in range(5):
        CommentFactory(subject=subject, reply_to=root, body=f"Reply {n}")
    page = text(embed(web, subject))
    assert page.count("Reply ") == 3
    assert "View all 5 replies" in page
    replies = web.get(f"/embed/fragments/comments/{root.id}/replies", {"lang": "en"}, HTTP_X_FRAGMENT="1")
    assert replies.status_code == 200
    assert all(f"Reply {n}" in text(replies) for n in range(5))
    assert "<html" not in text(replies)
    # Without the script the same link is a whole page.
    assert "<html" in text(web.get(f"/embed/fragments/comments/{root.id}/replies"))


def test_flat_mode_names_whom_a_reply_answers(web, site):
    subject = SubjectFactory(site=site, mode=Mode.FLAT)
    alice, bob = UserFactory(display_name="Alice"), UserFactory(display_name="Bob")
    first = CommentFactory(subject=subject, author=alice, body="Hello")
    second = CommentFactory(subject=subject, author=bob, reply_to=first, body="Hi Alice")
    CommentFactory(subject=subject, author=alice, reply_to=second, body="Hi Bob")
    page = text(embed(web, subject))
    assert "reply to @Bob" in page
    assert 'class="cw-items mode-flat"' in page


def test_stacked_mode_folds_the_middle_of_a_long_chain(web, site):
    subject = SubjectFactory(site=site, mode=Mode.STACKED)
    parent = CommentFactory(subject=subject, body="Floor 1")
    for n in range(2, 11):
        parent = CommentFactory(subject=subject, reply_to=parent, body=f"Floor {n}")
    page = text(embed(web, subject, sort="new"))
    last_item = page.split('class="cw-stack"')[1]
    assert "Show 4 hidden floors" in last_item
    assert "Floor 1<" in last_item and "Floor 2<" in last_item and "Floor 9<" in last_item
    assert "Floor 5<" not in last_item
    chain = web.get(f"/embed/fragments/comments/{parent.id}/chain", HTTP_X_FRAGMENT="1")
    assert all(f"Floor {n}<" in text(chain) for n in range(1, 10))
    assert "Floor 10<" not in text(chain)


def test_a_deleted_comment_with_replies_is_a_placeholder(web, subject):
    root = CommentFactory(subject=subject, body="Soon gone")
    CommentFactory(subject=subject, reply_to=root, body="Still here")
    services.comment_soft_delete(comment=Comment.objects.get(pk=root.pk), actor=root.author)
    page = text(embed(web, subject))
    assert "This comment was deleted." in page
    assert "Soon gone" not in page and "Still here" in page


def test_pinned_and_featured_comments_carry_badges(web, subject):
    comment = CommentFactory(subject=subject)
    services.comment_set_flags(comment_id=comment.id, pinned=True, featured=True)
    page = text(embed(web, subject))
    assert "Pinned" in page and "Featured" in page


def test_fragments_show_the_readers_likes_and_own_pending_comments(web, subject):
    reader = UserFactory()
    liked = CommentFactory(subject=subject, body="Liked one")
    pending = CommentFactory(subject=subject, author=reader, body="Mine, held")
    services.comment_set_status(comment_id=pending.id, to_status=Status.PENDING)
    like_services.like_set(comment_id=liked.id, user=reader, liked=True)
    params = {"site": subject.site.key, "key": subject.key}
    mine = text(web.get("/embed/fragments/comments", params, **bearer(reader)))
    assert re.search(rf'id="c-{liked.id}".*?aria-pressed="true"', mine, re.S)
    assert "Mine, held" in mine and "Under review" in mine
    assert 'data-action="edit"' in mine and 'data-action="delete"' in mine
    anonymous = text(web.get("/embed/fragments/comments", params, HTTP_X_FRAGMENT="1"))
    assert "Mine, held" not in anonymous and 'aria-pressed="true"' not in anonymous


def test_a_list_fragment_reads_its_site_and_subject_once(web, subject):
    """Load more and a change of sort find the subject as the embed page does (site and id from
    the shared cache) and read it once, with the reader's role; the site is not read apart."""
    CommentFactory(subject=subject, body="First")
    params = {"site": subject.site.key, "key": subject.key}
    assert "First" in text(web.get("/embed/fragments/comments", params, HTTP_X_FRAGMENT="1"))
    with CaptureQueriesContext(connection) as queries:
        assert "First" in text(web.get("/embed/fragments/comments", params, HTTP_X_FRAGMENT="1"))
    reads = [q["sql"] for q in queries.captured_queries]
    assert sum(1 for sql in reads if 'FROM "comment_subject"' in sql) == 1
    assert not any('FROM "comments_site"' in sql for sql in reads)


def test_the_edit_button_disappears_after_the_edit_window(web, subject, settings):
    author = UserFactory()
    CommentFactory(subject=subject, author=author)
    params = {"site": subject.site.key, "key": subject.key}
    assert 'data-action="edit"' in text(web.get("/embed/fragments/comments", params, **bearer(author)))
    settings.COMMENTS_EDIT_WINDOW = 0
    fragment = text(web.get("/embed/fragments/comments", params, **bearer(author)))
    assert 'data-action="edit"' not in fragment and 'data-action="delete"' in fragment


ACTIONS = ("like", "reply", "edit", "report", "delete")


def offered(fragment: str, comment_id: int) -> set[str]:
    """The buttons the comment ``comment_id`` offers in ``fragment``."""
    article = re.search(rf'<article[^>]* id="c-{comment_id}".*?</article>', fragment, re.S).group(0)
    return {action for action in ACTIONS if f'data-action="{action}"' in article}


def test_a_closed_discussion_offers_readers_nothing_it_would_refuse(web, subject, moderator):
    """Closed means read-only for all but the site's moderators (API.md): a reader was still
    shown Like, Reply, Edit and Report, each answering "This discussion is closed."."""
    reader = UserFactory()
    root = CommentFactory(subject=subject, author=reader, body="Mine, from before")
    other = CommentFactory(subject=subject, body="Someone else's")
    reply = CommentFactory(subject=subject, reply_to=other, body="A reply")
    like_services.like_set(comment_id=other.id, user=reader, liked=True)
    params = {"site": subject.site.key, "key": subject.key}
    before = text(web.get("/embed/fragments/comments", params, **bearer(reader)))
    assert offered(before, root.id) == {"like", "reply", "edit", "delete"}
    assert offered(before, other.id) == {"like", "reply", "report"}

    services.subject_update(subject=subject, actor=moderator, state="closed")

    fragment = text(web.get("/embed/fragments/comments", params, **bearer(reader)))
    assert offered(fragment, root.id) == {"delete"}  # their own comment is still theirs to remove
    assert offered(fragment, other.id) == set()
    # The like count is still told, with the reader's own like.
    assert re.search(
        rf'id="c-{other.id}".*?class="cw-like cw-like-closed" data-liked="1".*?cw-like-count">1<', fragment, re.S
    )
    replies = text(web.get(f"/embed/fragments/comments/{other.id}/replies", **bearer(reader)))
    assert offered(replies, reply.id) == set()
    single = text(web.get(f"/embed/fragments/comments/{reply.id}", {"mode": "stacked"}, **bearer(reader)))
    assert offered(single, reply.id) == set()
    assert offered(text(embed(web, subject)), other.id) == set()  # the page as first served

    as_moderator = text(web.get("/embed/fragments/comments", params, **bearer(moderator)))
    assert offered(as_moderator, other.id) == {"like", "reply", "report"}


def test_a_bad_token_on_a_fragment_is_a_401_not_an_anonymous_page(web, subject):
    response = web.get(
        "/embed/fragments/comments", {"site": subject.site.key, "key": subject.key}, HTTP_AUTHORIZATION="Bearer nope"
    )
    assert response.status_code == 401


@pytest.mark.parametrize(
    "url",
    [
        "/embed/fragments/comments/123/replies",
        "/embed/fragments/comments/123",
        "/embed/fragments/comments/9999999999999999999",
    ],
)
def test_fragments_of_unknown_comments_are_404(web, url):
    assert web.get(url).status_code == 404


def test_replies_of_a_reply_are_a_400(web, subject):
    root = CommentFactory(subject=subject)
    reply = CommentFactory(subject=subject, reply_to=root)
    assert web.get(f"/embed/fragments/comments/{reply.id}/replies").status_code == 400


def test_the_single_comment_fragment_renders_a_stacked_reply_with_its_chain(web, site):
    subject = SubjectFactory(site=site, mode=Mode.STACKED)
    root = CommentFactory(subject=subject, body="The question")
    reply = CommentFactory(subject=subject, reply_to=root, body="The answer")
    fragment = text(web.get(f"/embed/fragments/comments/{reply.id}", {"mode": "stacked"}, HTTP_X_FRAGMENT="1"))
    assert "cw-chain" in fragment and "The question" in fragment and "The answer" in fragment


def test_a_linked_comment_is_shown_only_in_its_own_discussion(web, site):
    # The widget asks for the comment a link names (the host page's #comment-<id>) with its
    # discussion: another discussion's comment is not found there.
    subject, elsewhere = SubjectFactory(site=site), SubjectFactory(site=site)
    comment = CommentFactory(subject=subject, body="Linked")
    url = f"/embed/fragments/comments/{comment.id}"
    assert "Linked" in text(web.get(url, {"mode": "stacked", "subject": subject.pk}, HTTP_X_FRAGMENT="1"))
    assert web.get(url, {"mode": "stacked", "subject": elsewhere.pk}, HTTP_X_FRAGMENT="1").status_code == 404
    assert web.get(url, {"subject": "x"}, HTTP_X_FRAGMENT="1").status_code == 400


def test_chinese_by_parameter_or_accept_language(web, subject):
    comment = CommentFactory(subject=subject)
    Comment.objects.filter(pk=comment.id).update(created_at=comment.created_at - timedelta(minutes=3))
    page = text(embed(web, subject, lang="zh-CN"))
    assert '<html lang="zh-hans"' in page
    assert "1 条评论" in page and "3分钟之前" in page and "回复" in page
    by_header = web.get(
        "/embed/", {"site": subject.site.key, "key": subject.key}, HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9"
    )
    assert by_header["Content-Language"] == "zh-hans"
    english = text(embed(web, subject, lang="en"))
    assert "1 comment" in english and "3\xa0minutes ago" in english


def test_theme_is_passed_to_the_page(web, subject):
    assert 'data-theme="dark"' in text(embed(web, subject, theme="dark"))


def test_counts_answer_the_sites_own_origins_across_origins(web, subject):
    CommentFactory(subject=subject)
    url = "/api/v1/counts"
    params = {"site": subject.site.key, "key": [subject.key, "missing"]}
    allowed = web.get(url, params, HTTP_ORIGIN=HOST)
    assert allowed.json() == {"counts": {subject.key: 1, "missing": 0}}
    assert allowed["Access-Control-Allow-Origin"] == HOST
    other = web.get(url, params, HTTP_ORIGIN="https://evil.example")
    assert "Access-Control-Allow-Origin" not in other
    assert "Origin" in other["Vary"]


def test_the_subject_is_created_through_the_api_on_the_first_post(web, site, client_for):
    user = UserFactory()
    api = client_for(user)
    created = api.post("/api/v1/subjects", {"site": site.key, "key": "article:new", "title": "New"}, format="json")
    assert created.status_code == 201
    page = text(web.get("/embed/", {"site": site.key, "key": "article:new"}))
    assert f'data-subject="{created.json()["id"]}"' in page
    assert Subject.objects.filter(site=site, key="article:new").count() == 1


def test_after_a_delete_the_script_learns_the_comment_is_gone_without_an_error(web, subject):
    comment = CommentFactory(subject=subject)
    services.comment_soft_delete(comment=Comment.objects.get(pk=comment.pk), actor=comment.author)
    assert web.get(f"/embed/fragments/comments/{comment.id}").status_code == 404
    gone = web.get(f"/embed/fragments/comments/{comment.id}", {"missing": "empty"}, HTTP_X_FRAGMENT="1")
    assert gone.status_code == 200 and gone.content == b""


def test_the_service_root_is_a_front_page_with_the_links_seed_demo_prints_in_the_readers_language(web):
    before_the_demo = text(web.get("/"))
    assert "seed_demo" in before_the_demo and "/console/" in before_the_demo
    SiteFactory(key="demo", allowed_origins=["http://127.0.0.1:8001", "http://localhost:8001"])
    page = web.get("/")
    assert page.status_code == 200 and page["Content-Language"] == "en"
    for link in ("http://127.0.0.1:8001/", "/console/", "/admin/", "/api/v1/docs/"):
        assert f'href="{link}"' in text(page)
    assert "Moderation console" in text(page)
    chinese = web.get("/", HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9,en;q=0.5")
    assert chinese["Content-Language"] == "zh-hans"
    assert "<h1>评论服务</h1>" in text(chinese) and "审核后台" in text(chinese) and "演示页面" in text(chinese)


def test_the_sign_in_button_follows_the_sites_methods_even_from_the_page_cache(web, subject):
    """With a method of the service's own (email) the button opens the sign-in window
    (signin.js); with SSO alone it asks the host; with neither there is none. The page of a
    discussion comes from the shared cache, which a change of the methods does not serve stale."""
    moderator = UserFactory(is_staff=True)
    CommentFactory(subject=subject)
    assert 'data-signin="popup"' in text(embed(web, subject))
    assert 'src="/static/comments/signin.js"' in text(embed(web, subject))

    services.site_signin_update(site=subject.site, actor=moderator, email=False)
    page = text(embed(web, subject))
    assert 'data-signin="popup"' not in page and 'data-action="login"' in page

    services.site_signin_update(site=subject.site, actor=moderator, sso=False)
    page = text(embed(web, subject))
    assert 'data-signin="popup"' not in page and 'data-action="login"' not in page
