"""Factories. Comments are made through ``comment_create`` so paths, floors and counters are
never set by hand."""

import factory
from factory.django import DjangoModelFactory

from comments import services
from comments.models import Mode, Site, Subject, User


class UserFactory(DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    display_name = factory.LazyAttribute(lambda o: o.username.capitalize())
    password = factory.django.Password("pw-123456")


class SiteFactory(DjangoModelFactory):
    class Meta:
        model = Site
        django_get_or_create = ("key",)

    key = factory.Sequence(lambda n: f"site{n}")
    name = factory.LazyAttribute(lambda o: f"Site {o.key}")
    sso_secret = "test-sso-secret"
    allowed_origins = ["https://host.example"]


class SubjectFactory(DjangoModelFactory):
    class Meta:
        model = Subject

    site = factory.SubFactory(SiteFactory)
    key = factory.Sequence(lambda n: f"article:{n}")
    title = factory.LazyAttribute(lambda o: f"Title of {o.key}")
    mode = Mode.TWO_LEVEL


class CommentFactory(factory.Factory):
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
            subject=subject, author=author, body=body,
            reply_to_id=getattr(reply_to, "id", reply_to), visibility=visibility,
        )

    @classmethod
    def _build(cls, *args, **kwargs):
        raise NotImplementedError("comments exist only once posted: use create()")
