"""Guest comments through the API (API.md, "Guest comments"): the form token, the comment."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from comments import queries
from comments.api import serializers as s
from comments.api.fields import CommentBodyField, IdField, StrictCharField
from comments.api.views import ApiView, client_ip, error_responses, query_params, validated

from . import guests


class GuestFormParams(serializers.Serializer):
    site = StrictCharField(max_length=64)


class GuestFormOut(serializers.Serializer):
    token = serializers.CharField()
    not_before = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()


class GuestCommentIn(s.ClosedObjectIn):
    site = StrictCharField(max_length=64)
    key = StrictCharField(max_length=255)
    title = StrictCharField(max_length=300, required=False, allow_blank=True, default="")
    url = serializers.URLField(max_length=2000, required=False, allow_blank=True, default="")
    # As the core's CommentIn: the service checks length and blankness.
    body = CommentBodyField()
    reply_to_id = IdField(required=False, allow_null=True)
    name = StrictCharField(max_length=100)
    email = serializers.EmailField(max_length=254, required=False, allow_blank=True, default="")
    form_token = StrictCharField(max_length=500)
    # The honeypot: empty or left out (guest_comment_post refuses it filled too).
    website = StrictCharField(max_length=0, required=False, allow_blank=True, trim_whitespace=False, default="")


class GuestCommentOut(s.TokenOut):
    comment = s.CommentOut()


class GuestFormView(ApiView):
    authentication_classes: list = []

    @extend_schema(
        parameters=[GuestFormParams],
        responses={200: GuestFormOut, **error_responses(400, 403, 404)},
        summary="A token for a guest's comment form",
    )
    def get(self, request):
        """What the widget asks for as it shows the guest form: a signed token of the moment,
        to send with the comment, not before ``not_before`` (a person takes that long to
        write) nor after ``expires_at``; good once. 403 ``guests_not_allowed`` when the site
        takes no comments from guests."""
        site = queries.site_by_key(site_key=query_params(request, GuestFormParams)["site"])
        form = guests.form_token_issue(site=site)
        response = Response({"token": form.token, "not_before": form.not_before, "expires_at": form.expires_at})
        response["Cache-Control"] = "no-store"
        return response


class GuestCommentView(ApiView):
    @extend_schema(
        request=GuestCommentIn,
        responses={201: GuestCommentOut, **error_responses(400, 401, 403, 404)},
        summary="Post a comment as a guest",
    )
    def post(self, request):
        """A reader with no account comments on the subject ``key`` of ``site`` (made if
        new) under ``name``, with ``email`` if they like (never shown). The answer holds the
        comment (its author marked ``"guest": true``) and a bearer token good until the
        comment's edit window ends: with it, this browser alone edits or deletes the comment
        through the usual endpoints, and posts again under the same name. Refusals: 403
        ``guests_not_allowed``; 400 ``invalid`` (a filled ``website`` honeypot among them),
        ``form_token_invalid``, ``form_token_expired``, ``form_token_used``, ``too_fast``
        (with ``Retry-After``); 429 ``rate_limited``; then the checks of every comment."""
        data = validated(GuestCommentIn, request.data)
        site = queries.site_by_key(site_key=data["site"])
        token = request.auth if request.user.is_authenticated else None
        posted = guests.guest_comment_post(
            site=site,
            key=data["key"],
            title=data["title"],
            url=data["url"],
            body=data["body"],
            reply_to_id=data.get("reply_to_id"),
            name=data["name"],
            email=data["email"],
            form_token=data["form_token"],
            honeypot=data["website"],
            token=token,
            client=client_ip(request),
            user_agent=request.META.get("HTTP_USER_AGENT", ""),
        )
        author = posted.comment.author
        return Response(
            {
                "comment": queries.present_new_comment(
                    comment=posted.comment, viewer=queries.viewer_for(user=author, site=site)
                ),
                "token": posted.token,
                "expires_at": posted.token_row.expires_at,
                "user": queries.present_user(author),
            },
            status=status.HTTP_201_CREATED,
        )
