"""Input serializers (validation only; views call services with their ``validated_data``) and
output serializers (documentation of the shapes the queries build, for the OpenAPI schema)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema_serializer
from rest_framework import serializers

from ..models import Mode, ModerationPolicy, Status, SubjectState, Visibility
from .fields import CommentBodyField, IdField, ProviderKeysField, StrictBooleanField, StrictCharField

# --- query parameters ----------------------------------------------------------------------


class PageParams(serializers.Serializer):
    limit = serializers.IntegerField(min_value=1, max_value=100, default=20)
    # Well under the longest URL the API reads (comments.middleware.MAX_URL_BYTES); a cursor of
    # the longest hot head (COMMENTS_HOT_LIMIT) is a few hundred characters.
    cursor = serializers.CharField(required=False, max_length=4096)


class CommentListParams(PageParams):
    mode = serializers.ChoiceField(choices=Mode.values, required=False)
    sort = serializers.ChoiceField(choices=["hot", "new", "old"], required=False)
    replies = serializers.IntegerField(min_value=0, max_value=10, default=3)


class ReplyListParams(PageParams):
    sort = serializers.ChoiceField(choices=["hot", "new", "old"], default="old")


class SubjectLookupParams(serializers.Serializer):
    site = serializers.CharField(max_length=64)
    key = serializers.CharField(max_length=255)


class CountsParams(serializers.Serializer):
    # Left out by a page with counts but no widget: the site of the request's Origin.
    site = serializers.CharField(
        max_length=64,
        required=False,
        help_text="the site's key; left out, the site whose allowed origins hold the request's Origin",
    )
    key = serializers.ListField(
        child=serializers.CharField(max_length=255), min_length=1, max_length=100, help_text="1 to 100 subject keys"
    )


# --- bodies --------------------------------------------------------------------------------


class ClosedObjectIn(serializers.Serializer):
    """An object whose unknown keys are refused (``400 invalid``, each in ``fields``) rather than
    ignored: a typo (``"reply_to"`` for ``"reply_to_id"``) or a field the client may not set
    would otherwise make a different write than the one meant, answered 201. Every body the API
    takes is one; its schema says so (``additionalProperties: false``, ``comments.api.schema``)."""

    unknown_message = "Unknown field."

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: [self.unknown_message] for name in unknown})
        return super().to_internal_value(data)


class TokenIn(ClosedObjectIn):
    username = StrictCharField(max_length=150)
    password = StrictCharField(max_length=256, trim_whitespace=False)


class SsoIn(ClosedObjectIn):
    site = StrictCharField(max_length=64)
    payload = StrictCharField(max_length=16384)


@extend_schema_serializer(
    examples=[OpenApiExample("Guests, held for review", value={"guests": True, "guest_moderation": "pre"})]
)
class SiteSigninIn(ClosedObjectIn):
    sso = StrictBooleanField(required=False)
    email = StrictBooleanField(required=False)
    guests = StrictBooleanField(required=False)
    oidc = ProviderKeysField(required=False)
    link_email = StrictBooleanField(required=False)
    guest_moderation = serializers.ChoiceField(choices=ModerationPolicy.values, required=False)


class SiteSigninOut(serializers.Serializer):
    site = serializers.CharField()
    sso = serializers.BooleanField()
    email = serializers.BooleanField()
    oidc = serializers.ListField(child=serializers.CharField())
    guests = serializers.BooleanField()
    link_email = serializers.BooleanField()
    guest_moderation = serializers.ChoiceField(choices=ModerationPolicy.values)


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "A blog post",
            value={"site": "demo", "key": "article:42", "title": "Hello, world", "url": "https://blog.example/42"},
        )
    ]
)
class SubjectIn(ClosedObjectIn):
    site = StrictCharField(max_length=64)
    key = StrictCharField(max_length=255)
    title = StrictCharField(max_length=300, required=False, allow_blank=True, default="")
    url = serializers.URLField(max_length=2000, required=False, allow_blank=True, default="")


class SubjectPatchIn(ClosedObjectIn):
    mode = serializers.ChoiceField(choices=Mode.values, required=False)
    state = serializers.ChoiceField(choices=SubjectState.values, required=False)
    title = StrictCharField(max_length=300, required=False, allow_blank=True)


@extend_schema_serializer(
    examples=[OpenApiExample("A comment", value={"body": "Nice article, **thanks**!", "visibility": "public"})]
)
class CommentIn(ClosedObjectIn):
    # Length and blankness are checked by the service (one rule for every surface); here only
    # the type, so a number is refused instead of being turned into text.
    body = CommentBodyField()
    reply_to_id = IdField(required=False, allow_null=True)
    visibility = serializers.ChoiceField(choices=Visibility.values, default=Visibility.PUBLIC)


@extend_schema_serializer(examples=[OpenApiExample("An edit", value={"body": "Nice article, thanks! (edited)"})])
class CommentPatchIn(ClosedObjectIn):
    body = CommentBodyField()


# --- outputs (schema) ----------------------------------------------------------------------


class UserOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    avatar = serializers.CharField(allow_null=True)
    guest = serializers.BooleanField(
        required=False, help_text="true for a guest (no account); absent for everyone else"
    )


class TokenOut(serializers.Serializer):
    token = serializers.CharField()
    expires_at = serializers.DateTimeField()
    user = UserOut()


class CsrfOut(serializers.Serializer):
    csrf_token = serializers.CharField()


class SubjectOut(serializers.Serializer):
    id = serializers.IntegerField()
    site = serializers.CharField(source="site.key")
    key = serializers.CharField()
    title = serializers.CharField()
    url = serializers.CharField()
    mode = serializers.ChoiceField(choices=Mode.values)
    state = serializers.ChoiceField(choices=SubjectState.values)
    comment_count = serializers.IntegerField()
    root_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class ReplyToOut(serializers.Serializer):
    id = serializers.IntegerField()
    author = UserOut(allow_null=True)


class CommentOut(serializers.Serializer):
    id = serializers.IntegerField()
    subject_id = serializers.IntegerField()
    reply_to_id = serializers.IntegerField(allow_null=True)
    root_id = serializers.IntegerField(allow_null=True)
    depth = serializers.IntegerField()
    floor = serializers.IntegerField()
    author = UserOut(allow_null=True)
    reply_to = ReplyToOut(allow_null=True)
    body = serializers.CharField()
    html = serializers.CharField()
    status = serializers.ChoiceField(choices=Status.values)
    visibility = serializers.ChoiceField(choices=Visibility.values)
    pinned = serializers.BooleanField()
    featured = serializers.BooleanField()
    like_count = serializers.IntegerField()
    liked = serializers.BooleanField()
    reply_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    edited_at = serializers.DateTimeField(allow_null=True)


class TwoLevelCommentOut(CommentOut):
    replies = CommentOut(many=True, required=False, help_text="two_level mode: hottest replies")
    chain = CommentOut(many=True, required=False, help_text="stacked mode: ancestors, top-level first")


class CommentPageOut(serializers.Serializer):
    items = TwoLevelCommentOut(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class PlainCommentPageOut(serializers.Serializer):
    items = CommentOut(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class ChainOut(serializers.Serializer):
    items = CommentOut(many=True)


class CountsOut(serializers.Serializer):
    counts = serializers.DictField(child=serializers.IntegerField())


class FollowOut(serializers.Serializer):
    following = serializers.BooleanField()
    mutual = serializers.BooleanField()


class ErrorDetailOut(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    # A declared field named like Serializer.fields: the metaclass moves it into _declared_fields.
    fields = serializers.DictField(child=serializers.ListField(child=serializers.CharField()), required=False)  # type: ignore[assignment]


class ErrorOut(serializers.Serializer):
    error = ErrorDetailOut()
