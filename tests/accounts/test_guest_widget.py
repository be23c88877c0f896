"""The widget's pages for guests: the guest form only where the site takes guests (and at once
when it starts to, though the page comes from the shared cache), its honeypot out of a
person's reach, and the "Guest" mark on a guest's comment, never on a member's of the same
name; the feeds mark it too."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from accounts.guests import form_token_issue, guest_comment_post
from comments import services
from comments.models import Status
from comments.services import site_store

from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory


@pytest.fixture
def subject(db, settings):
    settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS = 0
    return SubjectFactory(site=SiteFactory(key="blog"), key="post-1")


def embed(subject, **params) -> str:
    response = Client().get("/embed/", {"site": subject.site.key, "key": subject.key, **params})
    assert response.status_code == 200
    return response.content.decode()


def test_the_guest_form_shows_where_the_site_takes_guests_even_from_the_page_cache(subject):
    moderator = UserFactory(is_staff=True)
    CommentFactory(subject=subject)  # a discussion: its page comes from the shared cache
    page = embed(subject)
    assert 'id="cw-guest"' not in page and "guest.js" not in page

    services.site_signin_update(site=subject.site, actor=moderator, guests=True)
    page = embed(subject)
    form = re.search(r'<form class="cw-form cw-guest".*?</form>', page, re.S).group(0)
    assert 'src="/static/comments/guest.js"' in page
    for name in ("name", "email", "body", "website"):
        assert f'name="{name}"' in form
    honeypot = re.search(r'<div class="cw-hp"[^>]*>.*?</div>', form).group(0)
    assert 'aria-hidden="true"' in honeypot and 'tabindex="-1"' in honeypot and 'autocomplete="off"' in honeypot
    assert "A moderator reviews guest comments before they are shown." in form

    assert "Sign in to join the discussion." in page
    services.site_signin_update(site=subject.site, actor=moderator, sso=False, email=False)
    assert "Sign in to join the discussion." not in embed(subject)  # guests alone: nothing to sign in to

    services.site_signin_update(site=subject.site, actor=moderator, guest_moderation="post")
    assert "A moderator reviews guest comments" not in embed(subject)
    assert "访客评论经版主审核后才会显示" not in embed(subject, lang="zh-hans")
    services.site_signin_update(site=subject.site, actor=moderator, guest_moderation="pre")
    assert "访客评论经版主审核后才会显示" in embed(subject, lang="zh-hans")


def test_a_guests_comment_is_marked_and_a_members_of_the_same_name_is_not(subject):
    site = subject.site
    site.signin_guests, site.guest_moderation = True, "post"
    site_store(site=site)
    member = UserFactory(display_name="Ada")
    CommentFactory(subject=subject, author=member, body="The member speaks")
    posted = guest_comment_post(
        site=site, key=subject.key, body="The guest speaks", name="Ada", form_token=form_token_issue(site=site).token
    )
    assert posted.comment.status == Status.PUBLISHED
    page = embed(subject, sort="new")
    guest = re.search(rf'<article[^>]*id="c-{posted.comment.pk}".*?</article>', page, re.S).group(0)
    assert (
        '<span class="cw-name">Ada</span> <span class="cw-badge cw-badge-guest"' in guest and ">Guest</span>" in guest
    )
    members = re.findall(r'<article[^>]*id="c-\d+".*?</article>', page, re.S)
    (theirs,) = [a for a in members if "The member speaks" in a]
    assert "cw-badge-guest" not in theirs and '<span class="cw-name">Ada</span>' in theirs


def test_feeds_mark_a_guests_comment(subject):
    site = subject.site
    site.signin_guests, site.guest_moderation = True, "post"
    site_store(site=site)
    guest_comment_post(
        site=site, key=subject.key, body="Hello", name="Ada", form_token=form_token_issue(site=site).token
    )
    CommentFactory(subject=subject, author=UserFactory(display_name="Ada"), body="Hello too")
    feed = Client().get(f"/feeds/subjects/{subject.pk}/comments.rss").content.decode()
    assert feed.count("<title>Ada (guest) on ") == 1 and feed.count("<title>Ada on ") == 1
