"""Factories. Comments are made through ``comment_create`` so paths, floors and counters are
never set by hand."""

import time
import uuid
from collections.abc import Callable
from typing import TypeVar, cast

import factory
from django.conf import settings
from factory.base import BaseFactory
from factory.django import DjangoModelFactory

from comments import services
from comments.models import Comment, Mode, Site, Subject, User

Made = TypeVar("Made")


def _makes(factory_class: type[BaseFactory[Made]]) -> Callable[..., Made]:
    """The factory itself, typed as what calling it makes: factory_boy types
    ``UserFactory()`` as a ``UserFactory`` (its metaclass turns the call into ``create()``)."""
    return cast(Callable[..., Made], factory_class)


class _UserFactory(DjangoModelFactory[User]):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    display_name = factory.LazyAttribute(lambda o: o.username.capitalize())
    password = factory.django.Password("pw-123456")


class _SiteFactory(DjangoModelFactory[Site]):
    class Meta:
        model = Site
        django_get_or_create = ("key",)

    key = factory.Sequence(lambda n: f"site{n}")
    name = factory.LazyAttribute(lambda o: f"Site {o.key}")
    sso_secret = "test-sso-secret"
    allowed_origins = ["https://host.example"]


UserFactory = _makes(_UserFactory)
SiteFactory = _makes(_SiteFactory)


class _SubjectFactory(DjangoModelFactory[Subject]):
    class Meta:
        model = Subject

    site = factory.SubFactory(SiteFactory)
    key = factory.Sequence(lambda n: f"article:{n}")
    title = factory.LazyAttribute(lambda o: f"Title of {o.key}")
    mode = Mode.TWO_LEVEL

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        """Made as the services make subjects, with their key's row; a key the site already
        has is an error, as the unique key once made it."""
        subject = model_class(*args, **kwargs)
        made = services.subjects_create(subject.site, [subject])
        assert made[subject.key] == subject.pk, f"the site already has a subject {subject.key!r}"
        return subject


SubjectFactory = _makes(_SubjectFactory)


class _CommentFactory(factory.Factory[Comment]):
    """``CommentFactory(subject=..., author=..., reply_to=parent)``; posts through the service."""

    class Meta:
        model = dict  # built by _create below

    subject = factory.SubFactory(SubjectFactory)
    author = factory.SubFactory(UserFactory)
    body = factory.Sequence(lambda n: f"Comment number {n}")
    reply_to = None
    visibility = "public"

    @classmethod
    def _create(cls, model_class, *, subject, author, body, reply_to, visibility):
        return services.comment_create(
            subject=subject,
            author=author,
            body=body,
            reply_to_id=getattr(reply_to, "id", reply_to),
            visibility=visibility,
        )

    @classmethod
    def _build(cls, *args, **kwargs):
        raise NotImplementedError("comments exist only once posted: use create()")


CommentFactory = _makes(_CommentFactory)


def set_likes(comment_or_id, n: int) -> None:
    """The comment liked by exactly ``n`` users: ``set_likes_many`` for one comment."""
    set_likes_many({comment_or_id: n})


def set_likes_many(counts: dict) -> None:
    """Each comment (or id) of ``counts`` liked by exactly that many users, through the likes
    app's one writer of like rows (``like_actions_apply``, which the flush and the Redis-less
    road use), in one call: real rows, counts moved by the difference, the pages that show them
    told. As on the road taken when Redis does not answer, the comments' Redis state (if any)
    is marked stale. Works on a comment in any status: a comment liked while published keeps
    its like rows through moderation."""
    from likes.models import Like
    from likes.services import LikeAction, like_actions_apply

    wanted = {getattr(c, "pk", c): n for c, n in counts.items()}
    likers = _likers(max(wanted.values(), default=0))
    liked: dict[int, set[int]] = {pk: set() for pk in wanted}
    for comment_id, user_id in Like.objects.filter(comment_id__in=wanted, active=True).values_list(
        "comment_id", "user_id"
    ):
        liked[comment_id].add(user_id)
    now_ms = int(time.time() * 1000)
    actions = []
    for pk, n in wanted.items():
        keep = set(likers[:n])
        actions += [LikeAction(pk, user_id, True, now_ms) for user_id in keep - liked[pk]]
        actions += [LikeAction(pk, user_id, False, now_ms) for user_id in liked[pk] - keep]
    like_actions_apply(actions, mark_stale=bool(settings.LIKES_REDIS_URL))


def _likers(n: int) -> list[int]:
    """Ids of ``n`` users who like things in tests, created in one statement when missing."""
    have = list(User.objects.filter(username__startswith="liker-").order_by("pk").values_list("pk", flat=True)[:n])
    if len(have) < n:
        User.objects.bulk_create([User(username=f"liker-{uuid.uuid4().hex[:12]}") for _ in range(n - len(have))])
        return _likers(n)
    return have
