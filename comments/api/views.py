"""REST API v1 (API.md). Each view validates its input with a serializer, calls one service or
query, and returns what it got; no rule lives here."""

from __future__ import annotations

import functools
import ipaddress
import threading
from collections.abc import Callable

from axes.helpers import get_cool_off
from django.conf import settings
from django.contrib.auth import authenticate
from django.http import HttpResponse
from django.middleware.csrf import get_token
from django.utils.cache import patch_vary_headers
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from infra import encoding

from .. import idempotency, queries, services
from ..authentication import BearerTokenAuthentication
from ..exceptions import NotAuthenticated, NotFound, RateLimited
from ..models import ApiToken
from ..sso import verify_payload
from ..throttling import throttles
from . import serializers as s

ERRORS = {
    400: OpenApiResponse(s.ErrorOut, description="invalid"),
    401: OpenApiResponse(s.ErrorOut, description="not_authenticated"),
    403: OpenApiResponse(s.ErrorOut, description="permission_denied"),
    404: OpenApiResponse(s.ErrorOut, description="not_found"),
    429: OpenApiResponse(s.ErrorOut, description="rate_limited"),
}


def error_responses(*codes):
    return {code: ERRORS[code] for code in codes}


def validated(serializer_class, data) -> dict:
    """``data`` validated by ``serializer_class``; ``ValidationError`` (the contract's 400) with
    the field errors otherwise, as ``is_valid(raise_exception=True)`` raises them.

    A serializer instance deep-copies its declared fields, which cost a list request about a
    tenth of its CPU; validating keeps no state on the serializer, so each thread validates
    with one instance per class. A body of JSON ``null`` takes DRF's own road, which words
    that error ("No data provided")."""
    if data is None:
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data
    by_class = _validators.__dict__.setdefault("by_class", {})
    serializer = by_class.get(serializer_class)
    if serializer is None:
        serializer = by_class[serializer_class] = serializer_class()
    return serializer.run_validation(data)


_validators = threading.local()


def query_params(request, serializer_class) -> dict:
    """The query string validated by ``serializer_class``, for DRF's requests and Django's."""
    query, data = request.GET, {}
    for name, many in _param_names(serializer_class):
        if name in query:
            data[name] = query.getlist(name) if many else query.get(name)
    return validated(serializer_class, data)


@functools.cache
def _param_names(serializer_class) -> tuple[tuple[str, bool], ...]:
    """``(name, takes a list)`` of each query parameter, read once per class: a serializer
    instance deep-copies its fields, which is dear on every read of a list."""
    return tuple((name, hasattr(field, "child")) for name, field in serializer_class().fields.items())


def stale_marked(response, stale: bool):
    """A page served from the cache because the database could not rebuild it says so."""
    if stale:
        response[STALE_HEADER] = "1"
    return response


STALE_HEADER = "X-Comments-Stale"


def json_bytes_response(body: bytes) -> HttpResponse:
    """A page's JSON bytes as they are (nginx compresses them for the readers who accept it)."""
    return HttpResponse(body, content_type="application/json")


def client_ip(request) -> str | None:
    """The client's address as rate limits count it (DRF's reading, with ``NUM_PROXIES`` from
    ``COMMENTS_TRUSTED_PROXIES``): behind nginx the one nginx saw, never a header the client
    wrote itself."""
    address = BaseThrottle().get_ident(request)
    try:
        return str(ipaddress.ip_address(address)) if address else None
    except ValueError:  # a proxy count that does not match the proxies: garbage is not kept
        return None


def answered_once(request, write: Callable[[], tuple[int, object]]) -> HttpResponse:
    """The answer to a write, ``write()``'s ``(status, data)``; with an ``Idempotency-Key``,
    made once per key of the user and given again to the same request with the same key
    (``comments.idempotency``, marked ``Idempotent-Replayed: true``)."""
    key = idempotency.key_of(request)
    if key is None:
        status_code, data = write()
        return Response(data, status=status_code)

    def rendered() -> idempotency.Answer:
        status_code, data = write()
        return idempotency.Answer(status_code, encoding.dumps(data))

    answer = idempotency.answer_once(
        user=request.user,
        key=key,
        fingerprint=idempotency.fingerprint_of(request.method, request.path, request.data),
        write=rendered,
    )
    response = HttpResponse(answer.body, status=answer.status, content_type="application/json")
    if answer.replayed:
        response["Idempotent-Replayed"] = "true"
    return response


def subject_out(subject) -> dict:
    return s.SubjectOut(subject).data


def token_response(user, site=None):
    raw, token = services.token_issue(user=user, site=site)
    return Response({"token": raw, "expires_at": token.expires_at, "user": queries.present_user(user)})


class ApiView(APIView):
    """Base: JSON only, errors in the contract's shape."""


# --- identity ------------------------------------------------------------------------------


class TokenView(ApiView):
    def get_authenticators(self):
        # Logging in takes no credentials (a stale token sent along must not refuse it); signing
        # out takes the bearer token it revokes, and nothing else (a session is not a token).
        # The schema's generator asks before the view has a request (``self.request`` is None).
        method = getattr(self.request, "method", None)
        return [BearerTokenAuthentication()] if method == "DELETE" else []

    def get_throttles(self):
        return throttles("login") if self.request.method == "POST" else []

    @extend_schema(
        request=s.TokenIn,
        responses={200: s.TokenOut, **error_responses(400, 401, 429)},
        summary="Log in with a password",
    )
    def post(self, request):
        """Exchange a local user's username and password for a bearer token
        (``Authorization: Bearer <token>``, valid ``COMMENTS_TOKEN_TTL`` seconds) and the user.
        Wrong credentials are 401; attempts are rate-limited, and a username that failed
        ``AXES_FAILURE_LIMIT`` times from one address is refused there with 429 until its
        cool-off has passed, whatever the password."""
        data = validated(s.TokenIn, request.data)
        user = authenticate(request, username=data["username"], password=data["password"])
        if user is None:
            # django-axes marks this (DRF) request when the username is locked at this address:
            # its middleware only sees Django's request, so the refusal is answered here, in the
            # API's shape, rather than as "wrong password" to the owner who typed the right one.
            if getattr(request, "axes_locked_out", False):
                cool_off = get_cool_off(request)
                raise RateLimited(
                    "Too many failed sign-ins from your address; try again later.",
                    retry_after=cool_off.total_seconds() if cool_off else 60,
                )
            raise NotAuthenticated("Wrong username or password.")
        return token_response(user)

    @extend_schema(request=None, responses={204: None, **error_responses(401)}, summary="Sign out: revoke this token")
    def delete(self, request):
        """Revoke the bearer token that authenticates this request, whichever sign-in issued
        it: every later request with it is 401 ``not_authenticated``, in every process at once
        (a token is looked up on the primary on each request; none is cached). 401 without a
        valid token."""
        if not isinstance(request.auth, ApiToken):
            raise NotAuthenticated()
        services.token_revoke(token=request.auth)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SsoView(ApiView):
    authentication_classes: list = []

    def get_throttles(self):
        return throttles("login")

    @extend_schema(
        request=s.SsoIn,
        responses={200: s.TokenOut, **error_responses(400, 401, 403)},
        summary="Sign in with a host site's SSO payload",
    )
    def post(self, request):
        """Sign a host site's reader in: ``payload`` is ``<b64>.<sig>``, the base64url of the JSON
        claims ``{id, name, email?, avatar?, exp}`` and the hex HMAC-SHA256 of that text with the
        site's SSO secret. The same (site, id) is always the same local user, whose name and avatar
        follow the payload. A bad signature, an unknown site or a past ``exp`` is 401; a site
        that does not allow SSO answers 403."""
        data = validated(s.SsoIn, request.data)
        try:
            site = queries.site_by_key(site_key=data["site"])
        except NotFound:
            raise NotAuthenticated("Unknown site.") from None
        claims = verify_payload(site, data["payload"])
        user = services.sso_user_upsert(
            site=site, external_id=claims.external_id, name=claims.name, email=claims.email, avatar=claims.avatar
        )
        return token_response(user, site)


class CsrfView(ApiView):
    """For same-origin pages using the session: sets the CSRF cookie and returns its value."""

    @extend_schema(responses={200: s.CsrfOut}, summary="Get a CSRF token for session requests")
    def get(self, request):
        return Response({"csrf_token": get_token(request)})


class MeView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: s.UserOut, **error_responses(401)}, summary="The current user")
    def get(self, request):
        """The signed-in user (id, name, avatar); 401 when anonymous."""
        return Response(queries.present_user(request.user))


class SiteSigninView(ApiView):
    @extend_schema(
        responses={200: s.SiteSigninOut, **error_responses(404)}, summary="How readers may sign in to a site"
    )
    def get(self, request, site_key: str):
        """The sign-in methods the site allows: its host's SSO, a link by email, OpenID Connect
        providers, guest comments. Public: the widget asks it which buttons to show."""
        return Response(queries.site_signin(site=queries.site_by_key(site_key=site_key)))

    @extend_schema(
        request=s.SiteSigninIn,
        responses={200: s.SiteSigninOut, **error_responses(400, 401, 403, 404)},
        summary="Change how readers may sign in (moderators)",
    )
    def patch(self, request, site_key: str):
        """A site moderator turns sign-in methods on or off; what is left out stays as it is."""
        if not request.user.is_authenticated:
            raise NotAuthenticated()
        data = validated(s.SiteSigninIn, request.data)
        site = services.site_signin_update(site=queries.site_by_key(site_key=site_key), actor=request.user, **data)
        return Response(queries.site_signin(site=site))


# --- subjects ------------------------------------------------------------------------------


class SubjectsView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=s.SubjectIn,
        responses={200: s.SubjectOut, 201: s.SubjectOut, **error_responses(400, 401, 404)},
        summary="Get or create a subject",
    )
    def post(self, request):
        """Create the subject a site calls ``key`` (the host's own name for the page, such as
        ``article:42``), or return it when it exists: 201 when created, 200 when found."""
        data = validated(s.SubjectIn, request.data)
        site = queries.site_by_key(site_key=data["site"])
        subject, created = services.subject_get_or_create(
            site=site, key=data["key"], title=data["title"], url=data["url"], creator=request.user
        )
        return Response(subject_out(subject), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class SubjectLookupView(ApiView):
    @extend_schema(
        parameters=[s.SubjectLookupParams],
        responses={200: s.SubjectOut, **error_responses(400, 404)},
        summary="Find a subject by site and key",
    )
    def get(self, request):
        """The subject a site calls ``key``, or 404: how a host finds the id of a page's
        discussion."""
        params = query_params(request, s.SubjectLookupParams)
        return Response(subject_out(queries.subject_lookup(site_key=params["site"], key=params["key"])))


class SubjectDetailView(ApiView):
    @extend_schema(responses={200: s.SubjectOut, **error_responses(404)}, summary="A subject")
    def get(self, request, subject_id: int):
        """A subject with its display mode, state and public counts (comments, top-level
        comments)."""
        subject, _ = queries.subject_for_viewer(subject_id=subject_id, user=request.user)
        return Response(subject_out(subject))

    @extend_schema(
        request=s.SubjectPatchIn,
        responses={200: s.SubjectOut, **error_responses(400, 401, 403, 404)},
        summary="Change mode, state or title (moderators)",
    )
    def patch(self, request, subject_id: int):
        """A site moderator switches the display mode (a view over the same rows: nothing moves),
        closes or reopens the discussion, or renames it."""
        if not request.user.is_authenticated:
            raise NotAuthenticated()
        data = validated(s.SubjectPatchIn, request.data)
        subject, _ = queries.subject_for_viewer(subject_id=subject_id, user=request.user)
        subject = services.subject_update(subject=subject, actor=request.user, **data)
        return Response(subject_out(subject))


class CountsView(ApiView):
    @extend_schema(
        parameters=[s.CountsParams],
        responses={200: s.CountsOut, **error_responses(400)},
        summary="Public comment counts of many subjects",
    )
    def get(self, request):
        """Public comment counts of 1 to 100 subjects of one site in one call (unknown keys count
        0), for listing pages. Without ``site``, the site whose allowed origins hold the request's
        ``Origin``; the site's own origins may read the answer across origins (CORS)."""
        params = query_params(request, s.CountsParams)
        origin = request.headers.get("Origin", "")
        site_key, origin_allowed = queries.site_for_counts(site_key=params.get("site"), origin=origin)
        response = Response({"counts": queries.subject_counts(site_key=site_key, keys=params["key"])})
        # The widget's loader calls this from the host page: CORS for the site's own origins.
        response["Vary"] = "Origin"
        if origin_allowed:
            response["Access-Control-Allow-Origin"] = origin
        return response


# --- comments ------------------------------------------------------------------------------


def _page(page) -> Response:
    return Response({"items": page.items, "next_cursor": page.next_cursor})


def _anonymous_json_reader(request) -> bool:
    """Whether DRF would take ``request`` as an anonymous reader it answers in JSON: no bearer
    token, no session cookie, and no Accept header or one of whose media ranges JSON matches
    (as DRF's content negotiation matches them: quality ignored)."""
    meta = request.META
    if "HTTP_AUTHORIZATION" in meta or settings.SESSION_COOKIE_NAME in request.COOKIES:
        return False
    accept = meta.get("HTTP_ACCEPT")
    if accept is None:
        return True
    for media_range in accept.split(","):
        main, _, sub = media_range.split(";", 1)[0].strip().lower().partition("/")
        if main in ("*", "application") and sub in ("*", "json"):
            return True
    return False


class SubjectCommentsView(ApiView):
    def get_throttles(self):
        return throttles("post") if self.request.method == "POST" else []

    def dispatch(self, request, *args, **kwargs):
        # The hot door: an anonymous reader's hot page is in this process's memory, found by
        # the raw query string, and needs none of DRF's request handling (authentication,
        # permissions, content negotiation), which costs more than the rest of the answer.
        # Anything else, and any doubt, takes the usual road.
        if request.method == "GET" and _anonymous_json_reader(request):
            hot = queries.hot_list_page(
                subject_id=kwargs["subject_id"],
                query_string=request.META.get("QUERY_STRING", ""),
            )
            if hot is not None:
                # What DRF's answer says too: its methods, and that a session cookie would
                # change it (the session middleware says so once authentication read the session).
                response = json_bytes_response(hot)
                response["Allow"] = ", ".join(self.allowed_methods)
                patch_vary_headers(response, ("Cookie",))
                return response
        return super().dispatch(request, *args, **kwargs)

    @extend_schema(
        parameters=[s.CommentListParams],
        responses={200: s.CommentPageOut, **error_responses(400, 404)},
        summary="List a subject's comments in a display mode",
    )
    def get(self, request, subject_id: int):
        """A page of the subject's comments in a display mode: ``two_level`` (top-level comments,
        pinned first, then hot, new or old, each with up to ``replies`` of its hottest replies),
        ``flat`` (every comment by time) or ``stacked`` (as flat, each with the chain it answers).
        ``next_cursor`` leads to the next page of the same list."""
        query_string = request.META.get("QUERY_STRING", "")
        params = query_params(request, s.CommentListParams)
        read = queries.list_comments_json(
            subject_id=subject_id,
            user=request.user,
            mode=params.get("mode"),
            sort=params.get("sort"),
            limit=params["limit"],
            cursor=params.get("cursor"),
            replies=params["replies"],
            query_string=query_string,
        )
        return stale_marked(json_bytes_response(read.entry), read.stale)

    @extend_schema(
        request=s.CommentIn,
        responses={201: s.CommentOut, **error_responses(400, 401, 403, 404)},
        summary="Post a comment or a reply",
    )
    def post(self, request, subject_id: int):
        """Post a comment, or with ``reply_to_id`` a reply, as the signed-in user. The checks come
        first: a ban refuses (403 ``banned``), a blocked word refuses (400 ``content_blocked``);
        review words, spam signals and pre-moderation store it ``pending``, seen by its author as
        under review."""
        if not request.user.is_authenticated:
            raise NotAuthenticated()
        data = validated(s.CommentIn, request.data)
        subject, viewer = queries.subject_for_viewer(subject_id=subject_id, user=request.user)

        def post() -> tuple[int, dict]:
            comment = services.comment_create(
                subject=subject,
                author=request.user,
                body=data["body"],
                reply_to_id=data.get("reply_to_id"),
                visibility=data["visibility"],
                author_ip=client_ip(request),
                user_agent=request.META.get("HTTP_USER_AGENT", ""),
                viewer=viewer,
            )
            return status.HTTP_201_CREATED, queries.present_new_comment(comment=comment, viewer=viewer)

        return answered_once(request, post)


class CommentDetailView(ApiView):
    @extend_schema(responses={200: s.CommentOut, **error_responses(404)}, summary="A comment")
    def get(self, request, comment_id: int):
        """One comment as the viewer may see it; 404 for a comment they may not."""
        comment, viewer = queries.comment_for_viewer(comment_id=comment_id, user=request.user)
        return Response(queries.present_comments(rows=[comment], viewer=viewer)[comment.pk])

    @extend_schema(
        request=s.CommentPatchIn,
        responses={200: s.CommentOut, **error_responses(400, 401, 403, 404)},
        summary="Edit within the edit window (author)",
    )
    def patch(self, request, comment_id: int):
        """The author changes the body within ``COMMENTS_EDIT_WINDOW`` seconds of posting; sets
        ``edited_at``, and the new text is checked again."""
        if not request.user.is_authenticated:
            raise NotAuthenticated()
        data = validated(s.CommentPatchIn, request.data)
        comment, _ = queries.comment_for_viewer(comment_id=comment_id, user=request.user)
        services.comment_edit(comment=comment, editor=request.user, body=data["body"])
        comment, viewer = queries.comment_for_viewer(comment_id=comment_id, user=request.user)
        return Response(queries.present_comments(rows=[comment], viewer=viewer)[comment.pk])

    @extend_schema(responses={204: None, **error_responses(401, 403, 404)}, summary="Soft-delete (author or moderator)")
    def delete(self, request, comment_id: int):
        """Delete a comment (its author or a site moderator): it leaves every list, or stays as a
        placeholder while it has visible replies; counters follow."""
        if not request.user.is_authenticated:
            raise NotAuthenticated()
        comment, _ = queries.comment_for_viewer(comment_id=comment_id, user=request.user)
        services.comment_soft_delete(comment=comment, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CommentRepliesView(ApiView):
    @extend_schema(
        parameters=[s.ReplyListParams],
        responses={200: s.PlainCommentPageOut, **error_responses(400, 404)},
        summary="Every reply in a top-level comment's thread",
    )
    def get(self, request, comment_id: int):
        """List 2 of two-level mode: every reply in the thread of top-level comment ``{id}``, at any
        depth, each with the comment it answers; oldest first unless sorted. 400 for a reply's
        id."""
        params = query_params(request, s.ReplyListParams)
        comment, viewer = queries.comment_for_viewer(comment_id=comment_id, user=request.user)
        return _page(
            queries.list_replies(
                root=comment, viewer=viewer, sort=params["sort"], limit=params["limit"], cursor=params.get("cursor")
            )
        )


class CommentChainView(ApiView):
    @extend_schema(
        responses={200: s.ChainOut, **error_responses(404)},
        summary="The chain from the top-level comment down to this one",
    )
    def get(self, request, comment_id: int):
        """A stacked floor's chain: the comment's ancestors from the top-level comment down
        (placeholders included), the comment itself last."""
        comment, viewer = queries.comment_for_viewer(comment_id=comment_id, user=request.user)
        return Response({"items": queries.comment_chain(comment=comment, viewer=viewer)})


class CommentTreeView(ApiView):
    @extend_schema(
        parameters=[s.PageParams],
        responses={200: s.PlainCommentPageOut, **error_responses(400, 404)},
        summary="A comment and its subtree, depth-first",
    )
    def get(self, request, comment_id: int):
        """The comment and every comment under it, depth-first, siblings oldest first, a page at a
        time."""
        params = query_params(request, s.PageParams)
        comment, viewer = queries.comment_for_viewer(comment_id=comment_id, user=request.user)
        return _page(
            queries.comment_tree(comment=comment, viewer=viewer, limit=params["limit"], cursor=params.get("cursor"))
        )


class UserCommentsView(ApiView):
    @extend_schema(
        parameters=[s.PageParams],
        responses={200: s.PlainCommentPageOut, **error_responses(400, 404)},
        summary="A user's comments, newest first",
    )
    def get(self, request, user_id: int):
        """A user's comments across subjects, newest first: the published ones for others, every
        status of their own for the user themself."""
        params = query_params(request, s.PageParams)
        author = queries.user_by_id(user_id=user_id)
        return _page(
            queries.user_comments(author=author, user=request.user, limit=params["limit"], cursor=params.get("cursor"))
        )


class FollowView(ApiView):
    permission_classes = [IsAuthenticated]

    def _set(self, request, user_id, following):
        following, mutual = services.follow_set(follower=request.user, followee_id=user_id, following=following)
        return Response({"following": following, "mutual": mutual})

    @extend_schema(
        request=None, responses={200: s.FollowOut, **error_responses(400, 401, 404)}, summary="Follow a user"
    )
    def put(self, request, user_id: int):
        """Follow a user; two users who follow each other are friends and see each other's
        friends-only comments. Says whether the follow is now mutual."""
        return self._set(request, user_id, True)

    @extend_schema(
        request=None, responses={200: s.FollowOut, **error_responses(400, 401, 404)}, summary="Unfollow a user"
    )
    def delete(self, request, user_id: int):
        """Stop following a user; friends-only comments are no longer shared between the two."""
        return self._set(request, user_id, False)
