"""The widget's pages (issue 5): the embed page a host site frames, and the HTML fragments the
widget's script fetches for "load more", "view all replies", hidden floors and a just-posted
comment. One template set renders both, so the page and its fragments never disagree. Also the
service's front page, in the widget's languages.

Reads go through the same query functions as the REST API (``comments.queries``), with the
API's own parameter serializers; writes are not here at all: the widget sends them to
``/api/v1/`` with its bearer token. Fragments authenticate with that same token
(``BearerTokenAuthentication``) so ``liked`` flags and the reader's own pending comments show.

Every response carries a Content-Security-Policy whose ``frame-ancestors`` lists the site's
allowed origins (the global ``X-Frame-Options: DENY`` is lifted for these views only).
"""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext, ngettext
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_GET
from rest_framework import serializers
from rest_framework.exceptions import AuthenticationFailed

from infra import pagecache
from infra.errors import database_unavailable

from . import avatars, hooks, queries
from .api.serializers import CommentListParams, ReplyListParams
from .api.views import query_params, stale_marked
from .authentication import BearerTokenAuthentication
from .exceptions import CommentsError, NotFound
from .models import GONE_STATUSES, Mode, Site, Status, SubjectState

THEMES = ("light", "dark", "auto")
# An origin as it may appear in a CSP source list: no spaces, quotes or semicolons.
_ORIGIN = re.compile(r"^https?://[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^https?://\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")
PAGE_SIZE = 20
REPLY_PREVIEWS = 3
# A stacked chain longer than this shows its first and last floors and folds the middle.
CHAIN_HEAD, CHAIN_TAIL = 2, 3


def request_theme(request) -> str:
    """The theme the embedding page asked for, read one way by the page, its fragments and its
    error pages; "auto" for none or an unknown one (the embed page's parameters refuse an
    unknown one with a 400, shown in "auto")."""
    theme = request.GET.get("theme")
    return theme if theme in THEMES else "auto"


class EmbedParams(CommentListParams):
    """The embed page's query string: the API's list parameters plus the embedding context."""

    site = serializers.CharField(max_length=64)
    key = serializers.CharField(max_length=255)
    theme = serializers.ChoiceField(choices=THEMES, default="auto")
    lang = serializers.CharField(max_length=20, required=False, allow_blank=True)
    origin = serializers.CharField(max_length=300, required=False, allow_blank=True)
    title = serializers.CharField(max_length=300, required=False, allow_blank=True)
    url = serializers.CharField(max_length=2000, required=False, allow_blank=True)


class FragmentParams(serializers.Serializer):
    lang = serializers.CharField(max_length=20, required=False, allow_blank=True)
    mode = serializers.ChoiceField(choices=Mode.values, required=False)
    # The discussion the comment must belong to (a link's comment: another's is not found).
    subject = serializers.IntegerField(min_value=1, required=False)


class ListFragmentParams(FragmentParams, CommentListParams):
    site = serializers.CharField(max_length=64)
    key = serializers.CharField(max_length=255)


class RepliesFragmentParams(FragmentParams, ReplyListParams):
    pass


class Unauthorized(Exception):
    pass


# --- helpers -------------------------------------------------------------------------------


def request_user(request: HttpRequest):
    """The bearer token's user (the widget keeps its token in memory, never in a cookie)."""
    try:
        found = BearerTokenAuthentication().authenticate(request)
    except AuthenticationFailed:
        raise Unauthorized from None
    return found[0] if found else AnonymousUser()


def reader_language(request: HttpRequest, lang: str | None) -> str:
    """The language asked for (``lang``, else the request's Accept-Language), of those the
    service speaks; the sign-in window (accounts) speaks it too."""
    if lang:
        try:
            return translation.get_supported_language_variant(lang.strip().lower().replace("_", "-"))
        except LookupError:
            pass
    return translation.get_language_from_request(request)


def safe_origins(site: Site | None) -> list[str]:
    if site is None:
        return []
    origins = site.allowed_origins if isinstance(site.allowed_origins, list) else []
    return [o.rstrip("/") for o in origins if isinstance(o, str) and _ORIGIN.match(o.rstrip("/"))]


def _csp(site: Site | None, *, any_ancestor: bool = False) -> str:
    """The page's policy. Error pages without a site carry no data, so any page may frame them
    (the host's developer then sees "unknown site" in the frame rather than a blank box)."""
    if any_ancestor:
        ancestors = "*"
    else:
        ancestors = " ".join(safe_origins(site)) or "'none'"
    return (
        # Pictures only from the service: users' pictures are served from its origin
        # (comments.avatars), so no reader's browser asks another host for one.
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        f"frame-ancestors {ancestors}"
    )


_BETWEEN_TAGS = re.compile(r">\s*\n\s*<")


def _minified(html: str) -> str:
    # Template indentation is a good part of a page's bytes; text content never ends in ">"
    # (it is escaped), so only whitespace between tags goes.
    return _BETWEEN_TAGS.sub("><", html)


def respond(
    html: str, *, site: Site | None, lang: str, status: int = 200, any_ancestor: bool = False, minified: bool = False
) -> HttpResponse:
    if not minified:
        html = _minified(html)
    response = HttpResponse(html, status=status, content_type="text/html; charset=utf-8")
    response["Content-Security-Policy"] = _csp(site, any_ancestor=any_ancestor)
    response["Content-Language"] = lang
    response["Vary"] = "Accept-Language, Authorization"
    response["Cache-Control"] = "private, no-cache"
    response["Referrer-Policy"] = "strict-origin-when-cross-origin"
    return response


def error(
    request, *, status: int, message: str, lang: str, site: Site | None = None, theme: str = "auto"
) -> HttpResponse:
    with translation.override(lang):
        html = render_to_string(
            "comments/error.html", {"status": status, "message": message, "theme": theme, "lang": lang}, request
        )
    return respond(html, site=site, lang=lang, status=status, any_ancestor=site is None)


def unavailable_message() -> str:
    return gettext("Comments are unavailable for a moment. Please try again shortly.")


def validation_message(exc: serializers.ValidationError) -> str:
    detail = exc.detail
    if isinstance(detail, dict):
        names = ", ".join(sorted(str(name) for name in detail))
        return gettext("Invalid parameters: %(names)s.") % {"names": names}
    return gettext("Invalid parameters.")


def domain_message(exc: CommentsError) -> str:
    if isinstance(exc, NotFound):
        return gettext("Not found.")
    if exc.status == 400:
        return gettext("Invalid parameters: %(names)s.") % {"names": ", ".join(sorted(exc.fields or {})) or "cursor"}
    return gettext("You do not have permission to see this.")


def read_only(subject, viewer) -> bool:
    """A closed subject is read-only for all but its site's moderators (API.md, "Subjects"):
    they are shown no button that could only answer ``subject_closed``."""
    return subject.state == SubjectState.CLOSED and not viewer.is_moderator


def decorate(
    items: list[dict], user, mode: str, now, *, read_only: bool, root_floors: dict[int, int] | None = None
) -> list[dict]:
    """What the templates need beyond the API's comment shape: whose it is, whether it may
    still be edited, whether it is a placeholder, whether the viewer may act on it at all
    (``read_only``), the floor of a reply's top-level comment (``root_floors`` gives those the
    caller has; the rest come from the page or one query), and (stacked) how its chain is
    folded."""
    user_id = user.pk if getattr(user, "is_authenticated", False) else None
    window = timedelta(seconds=settings.COMMENTS_EDIT_WINDOW)
    shown = [c for item in items for c in (item, *item.get("replies", ()), *(item.get("chain") or ()))]
    # A reply's floor counts in its thread, so it is told with its thread's: "#3 · reply 2".
    floors = {c["id"]: c["floor"] for c in shown if c["root_id"] is None} | (root_floors or {})
    missing = {c["root_id"] for c in shown if c["root_id"] is not None} - floors.keys()
    if missing:
        floors |= queries.comment_floors(comment_ids=missing)

    for c in shown:
        c["placeholder"] = c["author"] is None and c["status"] in GONE_STATUSES
        c["own"] = user_id is not None and c["author"] is not None and c["author"]["id"] == user_id
        c["editable"] = c["own"] and not c["placeholder"] and now - c["created_at"] < window and not read_only
        c["read_only"] = read_only
        c["under_review"] = c["status"] == Status.PENDING
        c["thread_floor"] = floors.get(c["root_id"])

    for item in items:
        chain = item.get("chain")
        if chain is not None:
            if len(chain) > CHAIN_HEAD + CHAIN_TAIL + 1:
                item["chain_head"] = chain[:CHAIN_HEAD]
                item["chain_tail"] = chain[-CHAIN_TAIL:]
                item["chain_hidden"] = len(chain) - CHAIN_HEAD - CHAIN_TAIL
            else:
                item["chain_head"], item["chain_tail"], item["chain_hidden"] = chain, [], 0
        if mode == Mode.TWO_LEVEL and item["depth"] == 0:
            item["more_replies"] = item["reply_count"] > len(item.get("replies", []))
    return items


def context_query(*, lang: str, theme: str, origin: str, site: str = "", key: str = "") -> dict:
    """Parameters every link inside the frame carries, so a reader without JavaScript keeps
    the language and theme while paging."""
    query = {"lang": lang, "theme": theme}
    if origin:
        query["origin"] = origin
    if site:
        query["site"], query["key"] = site, key
    return query


def url(name: str, query: dict, *args) -> str:
    return f"{reverse(name, args=args)}?{urlencode({k: v for k, v in query.items() if v not in (None, '')})}"


# --- the embed page ------------------------------------------------------------------------


@xframe_options_exempt
@require_GET
def embed(request: HttpRequest) -> HttpResponse:
    """The complete, server-rendered discussion of one subject: readable without JavaScript
    (paginated by links) and the shell the widget's script enhances.

    Everyone gets the same page (the reader signs in inside it, through the API), so a page of
    an existing subject comes from the shared page cache, rendered once per version of the
    subject and variant of the query."""
    lang = reader_language(request, request.GET.get("lang"))
    theme = request_theme(request)
    site = None
    try:
        params = query_params(request, EmbedParams)
        site, subject_id = queries.embed_target(site_key=params["site"], key=params["key"])
        stale = False
        if subject_id is None:
            html = _embed_html(request, site, None, params, lang=lang, theme=theme)
        else:
            # A variant per value an anonymous client may choose freely would let anyone fill
            # the cache (issue 33, F7): a started discussion shows its own title and address,
            # not the host's (those name a discussion nobody has started yet), and an origin
            # that is not the site's is no origin at all.
            params = {k: v for k, v in params.items() if k not in ("title", "url")}
            origin = params.get("origin", "").rstrip("/")
            params["origin"] = origin if origin in safe_origins(site) else ""
            # The sign-in button and the guest form follow the site's methods: a page cached
            # before a change is another variant.
            signin = f"{site.signin_sso:d}{site.first_party_signin:d}{site.signin_guests:d}{site.guest_moderation}"
            variant = "embed:" + urlencode(
                sorted(
                    {**{k: str(v) for k, v in params.items()}, "lang": lang, "theme": theme, "signin": signin}.items()
                )
            )
            read = pagecache.shared_entry(
                subject_id,
                variant,
                lambda: _embed_html(
                    request,
                    site,
                    queries.subject_for_viewer(subject_id=subject_id, user=None)[0],
                    params,
                    lang=lang,
                    theme=theme,
                ),
                stale_ok=True,
            )
            html, stale = read.entry, read.stale
    except serializers.ValidationError as exc:
        with translation.override(lang):
            return error(request, status=400, message=validation_message(exc), lang=lang, site=site, theme=theme)
    except CommentsError as exc:
        with translation.override(lang):
            if site is None:
                message = gettext("Unknown site: this page is not set up for comments.")
            else:
                message = domain_message(exc)
            return error(request, status=exc.status, message=message, lang=lang, site=site, theme=theme)
    except DatabaseError as failure:
        if not database_unavailable(failure):
            raise
        with translation.override(lang):
            return error(request, status=503, message=unavailable_message(), lang=lang, site=site, theme=theme)
    return stale_marked(respond(html, site=site, lang=lang, minified=True), stale)


def _embed_html(request, site: Site, subject, params: dict, *, lang: str, theme: str) -> str:
    """The embed page of ``subject`` (None: a discussion nobody has started), minified."""
    viewer = queries.viewer_for(user=None, site=site)
    mode = params.get("mode") or (subject.mode if subject else site.default_mode)
    sort = params.get("sort") or ("hot" if mode == Mode.TWO_LEVEL else "old")
    page = None
    if subject is not None:
        page = queries.list_comments(
            subject=subject,
            viewer=viewer,
            mode=mode,
            sort=sort,
            limit=PAGE_SIZE,
            cursor=params.get("cursor"),
            replies=REPLY_PREVIEWS,
        )
    elif sort == "hot" and mode != Mode.TWO_LEVEL:
        raise serializers.ValidationError({"sort": ["hot is not allowed in this mode."]})
    origin = params.get("origin", "").rstrip("/")
    parent_origin = origin if origin in safe_origins(site) else ""
    query = context_query(lang=lang, theme=theme, origin=origin, site=site.key, key=params["key"])
    items = decorate(page.items, None, mode, timezone.now(), read_only=read_only(subject, viewer)) if page else []
    sorts = ("hot", "new") if mode == Mode.TWO_LEVEL else ("old", "new")
    parts, part_scripts = hooks.widget_parts(site)
    context = {
        "site": site,
        "subject": subject,
        "subject_key": params["key"],
        "title": subject.title if subject is not None else params.get("title", ""),
        "host_url": subject.url if subject is not None else params.get("url", ""),
        "mode": mode,
        "sort": sort,
        "sorts": [(s, url("comments-web:embed", {**query, "mode": mode, "sort": s}), s == sort) for s in sorts],
        "items": items,
        "first_page": not params.get("cursor"),
        "first_page_url": url("comments-web:embed", {**query, "mode": mode, "sort": sort}),
        "more_url": url("comments-web:embed", {**query, "mode": mode, "sort": sort, "cursor": page.next_cursor})
        if page and page.next_cursor
        else "",
        "more_fragment_url": url(
            "comments-web:fragment-comments", {**query, "mode": mode, "sort": sort, "cursor": page.next_cursor}
        )
        if page and page.next_cursor
        else "",
        "list_fragment_url": url("comments-web:fragment-comments", {**query, "mode": mode}),
        "query": urlencode({"lang": lang, "theme": theme, "mode": mode, **({"origin": origin} if origin else {})}),
        "theme": theme,
        "lang": lang,
        "parent_origin": parent_origin,
        "closed": subject is not None and subject.state == SubjectState.CLOSED,
        "count": subject.comment_count if subject else 0,
        "max_body": settings.COMMENTS_MAX_BODY,
        # What feature apps add to the page (comments.hooks.register_widget_part).
        "parts": parts,
        "part_scripts": part_scripts,
    }
    with translation.override(lang):
        context["strings"] = _strings()
        return _minified(render_to_string("comments/embed.html", context, request))


def _strings() -> dict:
    """Messages the script shows, translated here so the script carries no language."""
    return {
        "confirm_delete": gettext("Delete? Click again to confirm"),
        "linked": gettext("The comment you followed a link to"),
        "reported": gettext("Thanks, a moderator will look at it."),
        "posted": gettext("Your comment was posted."),
        "posted_review": gettext("Your comment was posted and is waiting for review."),
        "loaded": gettext("More comments loaded."),
        "signed_in": gettext("Signed in."),
        "signed_out": gettext("Signed out."),
        "deleted": gettext("Comment deleted."),
        "empty": gettext("Please write something first."),
        "sign_in_first": gettext("Sign in to take part in the discussion."),
        "error": gettext("Something went wrong. Please try again."),
        # "%s" is replaced by the number.
        "count_one": ngettext("%s comment", "%s comments", 1),
        "count_other": ngettext("%s comment", "%s comments", 2),
        # The templates' words for a thread's folded replies, "%s" for the number.
        "replies_one": ngettext("View %(counter)s reply", "View all %(counter)s replies", 1) % {"counter": "%s"},
        "replies_other": ngettext("View %(counter)s reply", "View all %(counter)s replies", 2) % {"counter": "%s"},
        "errors": {
            "invalid": gettext("That did not work: please check what you wrote."),
            "content_blocked": gettext("Your comment contains words that are not allowed here."),
            "not_authenticated": gettext("Your sign-in has expired. Please sign in again."),
            "permission_denied": gettext("You are not allowed to do that."),
            "subject_closed": gettext("This discussion is closed."),
            "banned": gettext("You cannot take part in discussions on this site."),
            "not_found": gettext("This comment is no longer available."),
            "rate_limited": gettext("You are going too fast. Please wait a moment."),
        },
    }


# --- the service's front page --------------------------------------------------------------


@require_GET
def avatar(request: HttpRequest, user_id: int, digest: str) -> HttpResponse:
    """A user's picture from the service's origin (``comments.avatars``): kept by browsers for
    good (its address changes with the picture), a stand-in drawn from the initial for a short
    while when the picture could not be fetched."""
    try:
        picture = avatars.avatar_picture(user_id, digest)
    except NotFound:
        return HttpResponse(status=404, content_type="text/plain; charset=utf-8")
    except DatabaseError as failure:
        if not database_unavailable(failure):
            raise
        return HttpResponse(status=503, content_type="text/plain; charset=utf-8")
    response = HttpResponse(picture.data, content_type=picture.content_type)
    kept = 365 * 24 * 3600 if picture.fetched else avatars.FAILURE_KEPT_SECONDS
    response["Cache-Control"] = f"public, max-age={kept}" + (", immutable" if picture.fetched else "")
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
    response["Cross-Origin-Resource-Policy"] = "cross-origin"  # host pages show it in their own UI too
    return response


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The service's root: where to go from here (the links ``seed_demo`` prints), in the
    reader's language. The demo page's address is the demo site's origin, which ``rundemo``
    keeps on the port it serves it from."""
    lang = reader_language(request, None)
    try:
        demo_url = queries.demo_host_url()
    except DatabaseError as failure:
        if not database_unavailable(failure):
            raise
        demo_url = None
    with translation.override(lang):
        html = render_to_string("comments/home.html", {"lang": lang, "demo_url": demo_url}, request)
    response = HttpResponse(html, content_type="text/html; charset=utf-8")
    response["Content-Language"] = lang
    response["Vary"] = "Accept-Language"
    return response
