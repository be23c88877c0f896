"""Mentions: how ``@name`` is found in text (any script, ended by a space or punctuation,
full-width punctuation too) and whom it names (a username, or the display name of one
participant of the discussion), and that the named are told."""

from __future__ import annotations

import pytest

from comments.rendering import parse_mentions
from comments.services import site_store
from notifications.models import Kind

from ..factories import UserFactory
from .conftest import post, told

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    "body,names",
    [
        ("@张三 你好", ["张三"]),
        ("@张三，你好", ["张三"]),  # a full-width comma ends the name
        ("（@李四）说得对。@王五。", ["李四", "王五"]),
        ("回复@山田太郎：ありがとう", ["山田太郎"]),  # a reply's usual opening: the "@" follows a word
        ("@김민수 안녕하세요", ["김민수"]),
        ("write to zhang@张三.com", []),  # an address, not a mention
        ("@@张三", []),
        ("@Alice and @alice and @ALICE.", ["alice"]),  # one per name, whatever its case
        ("@bob.", ["bob"]),  # a sentence's full stop is not part of the name
        ("@张三你好", ["张三你好"]),  # without a space the name runs on: readers write the space
        ("email@example.com @ok", ["ok"]),
    ],
)
def test_mentions_are_found_in_any_script(body, names):
    assert parse_mentions(body, 20) == names


def test_mentions_stop_at_the_limit():
    assert parse_mentions(" ".join(f"@user{n}" for n in range(30)), 20) == [f"user{n}" for n in range(20)]


def test_a_chinese_username_is_mentioned_and_told(subject, alice):
    zhang = UserFactory(username="张三")
    comment = post(subject, alice, "@张三，你怎么看？")
    assert comment.content.mentions == [{"id": zhang.pk, "name": "张三"}]
    assert told(zhang) == [(Kind.MENTION, comment.pk)]


def test_a_participants_display_name_is_mentioned(subject, alice):
    wang = UserFactory(username="sso-demo-0a1b2c", display_name="王五")  # a single sign-on user
    outsider = UserFactory(username="sso-demo-9f8e7d", display_name="赵六")
    post(subject, wang, "我先说两句")
    comment = post(subject, alice, "@王五 同意。@赵六 你呢？")
    assert comment.content.mentions == [{"id": wang.pk, "name": "王五"}]  # 赵六 never commented here
    assert told(wang) == [(Kind.MENTION, comment.pk)]
    assert told(outsider) == []


def test_a_display_name_shared_by_two_participants_mentions_nobody(subject, alice):
    first, second = UserFactory(display_name="小明"), UserFactory(display_name="小明")
    post(subject, first, "一")
    post(subject, second, "二")
    comment = post(subject, alice, "@小明 是哪位？")
    assert comment.content.mentions == []


def test_a_username_wins_over_a_display_name(subject, alice):
    named = UserFactory(username="lee")
    other = UserFactory(display_name="Lee")
    post(subject, other, "hi")
    comment = post(subject, alice, "@Lee")
    assert comment.content.mentions == [{"id": named.pk, "name": "lee"}]


def test_a_guest_taking_a_members_display_name_takes_none_of_their_mentions(subject, alice, settings):
    from accounts import guests

    settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS = 0
    subject.site.signin_guests = True
    site_store(site=subject.site)
    member = UserFactory(username="sso-demo-1", display_name="Lin")
    post(subject, member, "first")
    form = guests.form_token_issue(site=subject.site)
    guest = guests.guest_comment_post(
        site=subject.site, key=subject.key, body="me too", name="Lin", form_token=form.token
    )
    comment = post(subject, alice, "@Lin what do you think?")
    assert comment.content.mentions == [{"id": member.pk, "name": "lin"}]
    assert told(member) == [(Kind.MENTION, comment.pk)]
    assert told(guest.comment.author) == []
