"""REST API v1 of a user's own data (API.md, "Your data"): thin views over ``queries`` and
``services``. The serializers document the shapes for the OpenAPI schema."""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from comments.api.views import ApiView, error_responses
from comments.models import Status, Visibility

from . import queries, services


class _Subject(serializers.Serializer):
    id = serializers.IntegerField()
    key = serializers.CharField()
    title = serializers.CharField()
    url = serializers.CharField()


class _Account(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    name = serializers.CharField()
    email = serializers.CharField()
    avatar = serializers.CharField(allow_null=True)
    date_joined = serializers.DateTimeField()
    last_login = serializers.DateTimeField(allow_null=True)
    is_active = serializers.BooleanField()


class _Token(serializers.Serializer):
    site = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()


class _Identity(serializers.Serializer):
    site = serializers.CharField()
    external_id = serializers.CharField()
    email = serializers.CharField()
    created_at = serializers.DateTimeField()


class _OwnComment(serializers.Serializer):
    id = serializers.IntegerField()
    site = serializers.CharField()
    subject = _Subject()
    reply_to_id = serializers.IntegerField(allow_null=True)
    status = serializers.ChoiceField(choices=Status.values)
    visibility = serializers.ChoiceField(choices=Visibility.values)
    pinned = serializers.BooleanField()
    featured = serializers.BooleanField()
    floor = serializers.IntegerField()
    like_count = serializers.IntegerField()
    body = serializers.CharField()
    html = serializers.CharField()
    created_at = serializers.DateTimeField()
    edited_at = serializers.DateTimeField(allow_null=True)
    ip = serializers.CharField(allow_null=True)
    user_agent = serializers.CharField()


class _OwnLike(serializers.Serializer):
    comment_id = serializers.IntegerField()
    subject_id = serializers.IntegerField()
    site = serializers.CharField()
    liked_at = serializers.DateTimeField()


class _OwnReport(serializers.Serializer):
    comment_id = serializers.IntegerField()
    reason = serializers.CharField()
    detail = serializers.CharField()
    created_at = serializers.DateTimeField()


class _OwnSanction(serializers.Serializer):
    site = serializers.CharField()
    kind = serializers.CharField()
    until = serializers.DateTimeField(allow_null=True)
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()


class _Person(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class _Follow(serializers.Serializer):
    user = _Person()
    since = serializers.DateTimeField()


class _ModerationAction(serializers.Serializer):
    site = serializers.CharField(allow_null=True)
    action = serializers.CharField()
    comment_id = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()


class UserDataOut(serializers.Serializer):
    format = serializers.CharField(help_text=f'"{queries.USER_DATA_FORMAT}"')
    version = serializers.IntegerField()
    exported_at = serializers.DateTimeField()
    user = _Account()
    moderated_sites = serializers.ListField(child=serializers.CharField())
    tokens = _Token(many=True)
    identities = _Identity(many=True)
    comments = _OwnComment(many=True)
    likes = _OwnLike(many=True)
    reports = _OwnReport(many=True)
    sanctions = _OwnSanction(many=True)
    following = _Follow(many=True)
    followers = _Follow(many=True)
    moderation_actions = _ModerationAction(many=True)


class _Erased(serializers.Serializer):
    user_id = serializers.IntegerField()
    comments_kept_as_placeholders = serializers.IntegerField()
    comments_removed = serializers.IntegerField()
    likes_removed = serializers.IntegerField()
    reports_removed = serializers.IntegerField()
    follows_removed = serializers.IntegerField()
    identities_removed = serializers.IntegerField()
    tokens_removed = serializers.IntegerField()
    sites = serializers.ListField(child=serializers.IntegerField())


class ErasureOut(serializers.Serializer):
    erased = _Erased()


class MyDataView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses={200: UserDataOut, **error_responses(401)}, summary="Everything kept about the current user"
    )
    def get(self, request):
        """Everything the service keeps about the signed-in user as one JSON document (account,
        identities, comments with the address they were posted from, likes, reports, sanctions,
        follows, tokens' dates), as a download. Audited."""
        services.user_data_exported(user=request.user, actor=request.user)
        response = StreamingHttpResponse(queries.user_data_export(user=request.user), content_type="application/json")
        response["Content-Disposition"] = 'attachment; filename="my-comments-data.json"'
        return response

    @extend_schema(
        request=None,
        responses={200: ErasureOut, **error_responses(401)},
        summary="Erase the current user's data and close the account",
    )
    def delete(self, request):
        """Erase the signed-in user: the account closed, tokens revoked, identities, reports and
        follows removed, likes withdrawn with the counts corrected, comments turned into
        placeholders (or removed, per the site's setting). Audited."""
        report = services.user_erase(user=request.user, actor=request.user)
        return Response({"erased": report.as_dict()})
