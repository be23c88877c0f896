"""REST API v1 of likes (API.md, "Likes"): thin views over ``services`` and ``queries``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from comments.api.serializers import PageParams, UserOut
from comments.api.views import ApiView, error_responses, query_params
from comments.throttling import throttles

from . import queries, services


class LikeOut(serializers.Serializer):
    liked = serializers.BooleanField()
    like_count = serializers.IntegerField()


class LikerOut(serializers.Serializer):
    user = UserOut()
    liked_at = serializers.DateTimeField()


class LikersPageOut(serializers.Serializer):
    items = LikerOut(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class LikeView(ApiView):
    permission_classes = [IsAuthenticated]

    def get_throttles(self):
        return throttles("like")

    def _set(self, request, comment_id: int, liked: bool) -> Response:
        count, liked = services.like_set(comment_id=comment_id, user=request.user, liked=liked)
        return Response({"liked": liked, "like_count": count})

    @extend_schema(
        request=None, responses={200: LikeOut, **error_responses(401, 403, 404)}, summary="Like a comment (idempotent)"
    )
    def put(self, request, comment_id: int):
        """Like a comment, answered at once with its new count (from Redis; the like reaches the
        database within seconds). Liking it again changes nothing."""
        return self._set(request, comment_id, True)

    @extend_schema(
        request=None,
        responses={200: LikeOut, **error_responses(401, 403, 404)},
        summary="Unlike a comment (idempotent)",
    )
    def delete(self, request, comment_id: int):
        """Take a like back, answered at once with the comment's new count. Unliking again changes
        nothing."""
        return self._set(request, comment_id, False)


class LikersView(ApiView):
    @extend_schema(
        parameters=[PageParams],
        responses={200: LikersPageOut, **error_responses(400, 404)},
        summary="Who likes a comment, oldest like first",
    )
    def get(self, request, comment_id: int):
        """The users who like a comment, oldest like first, each with when they liked it."""
        params = query_params(request, PageParams)
        page = queries.likers(
            comment_id=comment_id, user=request.user, limit=params["limit"], cursor=params.get("cursor")
        )
        return Response({"items": page.items, "next_cursor": page.next_cursor})
