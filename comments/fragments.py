"""The widget's fragments: the pieces of the embed page its script fetches (a list page, a
reply list, a chain, one comment), each also a page of its own for a reader without JavaScript."""

from __future__ import annotations

import contextlib
from urllib.parse import urlencode

from django.db import DatabaseError
from django.http import HttpResponse
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_GET
from rest_framework import serializers

from infra.errors import database_unavailable

from . import queries
from .api.views import query_params
from .exceptions import CommentsError, NotFound
from .models import Mode, Site
from .views import (
    FragmentParams,
    ListFragmentParams,
    RepliesFragmentParams,
    Unauthorized,
    context_query,
    decorate,
    domain_message,
    error,
    read_only,
    reader_language,
    request_theme,
    request_user,
    respond,
    unavailable_message,
    url,
    validation_message,
)


def _fragment(request, template: str, context: dict, *, site: Site, lang: str) -> HttpResponse:
    """A bare fragment for the script (``X-Fragment: 1``); a reader without JavaScript who
    followed the same link gets it inside the page layout."""
    with translation.override(lang):
        context = {**context, "lang": lang, "theme": request_theme(request)}
        if request.headers.get("X-Fragment") == "1":
            html = render_to_string(template, context, request)
        else:
            html = render_to_string("comments/fragment_page.html", {**context, "fragment": template}, request)
    return respond(html, site=site, lang=lang)


def _fragment_view(handler):
    """Shared error handling: bad input is a 400, unknown things a 404, a bad token a 401,
    each a short translated message the script can show, never a 500."""

    @xframe_options_exempt
    @require_GET
    def view(request, *args, **kwargs):
        lang = reader_language(request, request.GET.get("lang"))
        try:
            user = request_user(request)
            return handler(request, *args, user=user, lang=lang, **kwargs)
        except Unauthorized:
            with translation.override(lang):
                return error(
                    request, status=401, message=gettext("Your sign-in has expired. Please sign in again."), lang=lang
                )
        except serializers.ValidationError as exc:
            with translation.override(lang):
                return error(request, status=400, message=validation_message(exc), lang=lang)
        except CommentsError as exc:
            with translation.override(lang):
                return error(request, status=exc.status, message=domain_message(exc), lang=lang)
        except DatabaseError as failure:
            if not database_unavailable(failure):
                raise
            with translation.override(lang):
                return error(request, status=503, message=unavailable_message(), lang=lang)

    view.__name__ = handler.__name__
    view.__doc__ = handler.__doc__
    return view


def _fragment_query(request, lang: str) -> dict:
    theme = request_theme(request)
    return context_query(lang=lang, theme=theme, origin=request.GET.get("origin", "")[:300])


@_fragment_view
def fragment_comments(request, *, user, lang):
    """A page of the subject's list (load more, switching sort, re-reading after sign-in)."""
    params = query_params(request, ListFragmentParams)
    # As the embed page: the site and the subject's id from the shared cache, then the subject
    # with the reader's role there in one query.
    site, subject_id = queries.embed_target(site_key=params["site"], key=params["key"])
    subject = viewer = None
    if subject_id is not None:
        with contextlib.suppress(NotFound):  # removed since its id was cached: no comments
            subject, viewer = queries.subject_for_viewer(subject_id=subject_id, user=user)
    mode = params.get("mode") or (subject.mode if subject else site.default_mode)
    sort = params.get("sort") or ("hot" if mode == Mode.TWO_LEVEL else "old")
    query = {**_fragment_query(request, lang), "site": site.key, "key": params["key"], "mode": mode, "sort": sort}
    items, next_cursor, count = [], None, 0
    if subject is not None and viewer is not None:
        page = queries.list_comments(
            subject=subject,
            viewer=viewer,
            mode=mode,
            sort=sort,
            limit=params["limit"],
            cursor=params.get("cursor"),
            replies=params["replies"],
        )
        items, next_cursor, count = (
            decorate(page.items, user, mode, timezone.now(), read_only=read_only(subject, viewer)),
            page.next_cursor,
            subject.comment_count,
        )
    context = {
        "items": items,
        "mode": mode,
        "count": count,
        "first_page": not params.get("cursor"),
        "query": urlencode({k: v for k, v in query.items() if k in ("lang", "theme", "mode", "origin")}),
        "more_url": url("comments-web:embed", {**query, "cursor": next_cursor}) if next_cursor else "",
        "more_fragment_url": url("comments-web:fragment-comments", {**query, "cursor": next_cursor})
        if next_cursor
        else "",
    }
    return _fragment(request, "comments/_list.html", context, site=site, lang=lang)


@_fragment_view
def fragment_replies(request, comment_id: int, *, user, lang):
    """Every reply in a top-level comment's thread (two-level mode's list 2), oldest first."""
    params = query_params(request, RepliesFragmentParams)
    root, viewer = queries.comment_for_viewer(comment_id=comment_id, user=user)
    page = queries.list_replies(
        root=root, viewer=viewer, sort=params["sort"], limit=params["limit"], cursor=params.get("cursor")
    )
    query = {**_fragment_query(request, lang), "sort": params["sort"]}
    context = {
        "items": decorate(
            page.items,
            user,
            Mode.FLAT,
            timezone.now(),
            read_only=read_only(root.subject, viewer),
            root_floors={root.pk: root.floor},
        ),
        "mode": Mode.TWO_LEVEL,
        "in_thread": True,
        "root_id": root.pk,
        "query": urlencode({k: v for k, v in query.items() if k in ("lang", "theme", "origin")}),
        "more_url": url("comments-web:fragment-replies", {**query, "cursor": page.next_cursor}, root.pk)
        if page.next_cursor
        else "",
        "more_fragment_url": url("comments-web:fragment-replies", {**query, "cursor": page.next_cursor}, root.pk)
        if page.next_cursor
        else "",
    }
    return _fragment(request, "comments/_replies.html", context, site=root.subject.site, lang=lang)


@_fragment_view
def fragment_chain(request, comment_id: int, *, user, lang):
    """The floors a stacked comment answers, top-level first (unfolding a long chain)."""
    comment, viewer = queries.comment_for_viewer(comment_id=comment_id, user=user)
    chain = queries.comment_chain(comment=comment, viewer=viewer)[:-1]
    context = {
        "chain": decorate(chain, user, Mode.STACKED, timezone.now(), read_only=read_only(comment.subject, viewer)),
        "query": urlencode(_fragment_query(request, lang)),
    }
    return _fragment(request, "comments/_chain.html", context, site=comment.subject.site, lang=lang)


@_fragment_view
def fragment_comment(request, comment_id: int, *, user, lang):
    """One comment as its list shows it (after posting or editing it); stacked mode with its
    chain."""
    params = query_params(request, FragmentParams)
    try:
        comment, viewer = queries.comment_for_viewer(comment_id=comment_id, user=user, subject_id=params.get("subject"))
    except NotFound:
        if request.GET.get("missing") != "empty":
            raise
        # The script asks after deleting: nothing left to show (no replies keep a placeholder).
        return respond("", site=None, lang=lang)
    mode = params.get("mode") or comment.subject.mode
    if mode == Mode.STACKED and comment.depth > 0:
        chain = queries.comment_chain(comment=comment, viewer=viewer)
        item = {**chain[-1], "chain": chain[:-1]}
    else:
        item = queries.present_comments(rows=[comment], viewer=viewer)[comment.pk]
        if mode == Mode.TWO_LEVEL and comment.depth == 0:
            item["replies"] = []
    context = {
        "items": decorate([item], user, mode, timezone.now(), read_only=read_only(comment.subject, viewer)),
        "mode": mode,
        "in_thread": mode == Mode.TWO_LEVEL and comment.depth > 0,
        "query": urlencode({**_fragment_query(request, lang), "mode": mode}),
        "more_url": "",
        "more_fragment_url": "",
    }
    return _fragment(request, "comments/_list.html", context, site=comment.subject.site, lang=lang)
