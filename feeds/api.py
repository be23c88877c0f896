"""REST API v1 of feeds (API.md, "Recent and top comments of a site"): the data behind a
"latest comments" sidebar, public, readable across origins by the site's own pages (CORS, as
the counts API), cacheable for a short while."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from django.utils.cache import patch_cache_control, patch_vary_headers
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from comments.api.serializers import CommentOut, PageParams
from comments.api.views import ApiView, error_responses, query_params
from comments.queries import site_by_key

from . import queries


class SidebarSubjectOut(serializers.Serializer):
    id = serializers.IntegerField()
    key = serializers.CharField()
    title = serializers.CharField()
    url = serializers.CharField(allow_null=True)


class SidebarCommentOut(CommentOut):
    subject = SidebarSubjectOut()


class SidebarPageOut(serializers.Serializer):
    items = SidebarCommentOut(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class TopParams(PageParams):
    days = serializers.IntegerField(min_value=1, max_value=365, default=30)


def _answer(request, site, page) -> Response | HttpResponse:
    """The page (a ``Page``, or the JSON of one), readable by the site's own origins."""
    if isinstance(page, bytes):
        response = HttpResponse(page, content_type="application/json")
    else:
        response = Response({"items": page.items, "next_cursor": page.next_cursor})
    patch_vary_headers(response, ["Origin"])
    origin = request.headers.get("Origin", "")
    if origin and origin in site.allowed_origins:
        response["Access-Control-Allow-Origin"] = origin
    patch_cache_control(response, public=True, max_age=settings.FEEDS_MAX_AGE)
    return response


class RecentCommentsView(ApiView):
    authentication_classes: list = []  # public data, the same for everyone

    @extend_schema(
        parameters=[PageParams],
        responses={200: SidebarPageOut, **error_responses(400, 404)},
        summary="A site's recent comments",
    )
    def get(self, request, site_key: str):
        """The site's published public comments in open subjects, newest first."""
        params = query_params(request, PageParams)
        site = site_by_key(site_key=site_key)
        return _answer(
            request, site, queries.recent_comments(site=site, limit=params["limit"], cursor=params.get("cursor"))
        )


class TopCommentsView(ApiView):
    authentication_classes: list = []

    @extend_schema(
        parameters=[TopParams],
        responses={200: SidebarPageOut, **error_responses(400, 404)},
        summary="A site's most liked comments",
    )
    def get(self, request, site_key: str):
        """The site's most liked published public comments in open subjects among those of the
        last ``days`` days (1..365, default 30), ties newest first. A first page may be up to
        ``FEEDS_MAX_AGE`` seconds old."""
        params = query_params(request, TopParams)
        site = site_by_key(site_key=site_key)
        page = queries.top_comments_json(
            site=site, days=params["days"], limit=params["limit"], cursor=params.get("cursor")
        )
        return _answer(request, site, page)
