"""REST API v1 of notifications (API.md, "Notifications"): thin views over ``queries`` and
``services``. Every endpoint is the signed-in reader's own (``401`` anonymous)."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from comments.api.fields import IdField, QueryBooleanField, StrictBooleanField, StrictIntegerField
from comments.api.serializers import ClosedObjectIn, PageParams, UserOut
from comments.api.views import ApiView, error_responses, query_params, validated
from comments.queries import site_by_key

from . import queries, services
from .models import DEFAULT_EMAIL, EmailMode, HeldEmail, Kind, SubscriptionState

# --- serializers ---------------------------------------------------------------------------


class InboxParams(PageParams):
    unread = QueryBooleanField(required=False, default=False)


class NotificationSubjectOut(serializers.Serializer):
    id = serializers.IntegerField()
    site = serializers.CharField()
    key = serializers.CharField()
    title = serializers.CharField()
    url = serializers.CharField()


class NotificationCommentOut(serializers.Serializer):
    id = serializers.IntegerField()
    root_id = serializers.IntegerField(allow_null=True)
    reply_to_id = serializers.IntegerField(allow_null=True)
    excerpt = serializers.CharField()


class NotificationOut(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=Kind.values)
    read = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    actor = UserOut(allow_null=True)
    subject = NotificationSubjectOut(allow_null=True)
    comment = NotificationCommentOut(allow_null=True)
    # A declared field named like Serializer.data: the metaclass moves it into _declared_fields.
    data = serializers.DictField(
        help_text='like_milestone: {"likes"}; decision: {"decision"}; queue: {"site", "open", "new"}'
    )  # type: ignore[assignment]


class InboxOut(serializers.Serializer):
    items = NotificationOut(many=True)
    next_cursor = serializers.CharField(allow_null=True)
    unread_count = serializers.IntegerField()


class UnreadOut(serializers.Serializer):
    unread_count = serializers.IntegerField()


class ReadAllIn(ClosedObjectIn):
    up_to_id = IdField(required=False, allow_null=True, default=None)


class ReadAllOut(UnreadOut):
    marked = serializers.IntegerField()


class _EmailModes(ClosedObjectIn):
    """An optional mode per kind; unknown kinds are refused rather than ignored."""

    unknown_message = f"Unknown kind; one of {list(DEFAULT_EMAIL)}."


def _email_modes(name: str, *, required: bool) -> type[serializers.Serializer]:
    fields = {kind: serializers.ChoiceField(choices=EmailMode.values, required=required) for kind in DEFAULT_EMAIL}
    return type(name, (_EmailModes,), fields)


EmailPreferencesIn = _email_modes("EmailPreferencesIn", required=False)
EmailPreferencesOut = _email_modes("EmailPreferencesOut", required=True)


class PreferencesIn(ClosedObjectIn):
    language = serializers.ChoiceField(choices=[code for code, _ in settings.LANGUAGES], required=False)
    like_milestones = StrictBooleanField(required=False)
    email = EmailPreferencesIn(required=False)


class PreferencesOut(serializers.Serializer):
    language = serializers.CharField()
    like_milestones = serializers.BooleanField()
    email = EmailPreferencesOut()


SUBSCRIPTION_STATES = [*SubscriptionState.values, "none"]


class SubscriptionIn(ClosedObjectIn):
    state = serializers.ChoiceField(choices=SUBSCRIPTION_STATES, default=SubscriptionState.SUBSCRIBED)


class SubscriptionOut(serializers.Serializer):
    state = serializers.ChoiceField(choices=SUBSCRIPTION_STATES)


# --- views ---------------------------------------------------------------------------------


class InboxView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[InboxParams],
        responses={200: InboxOut, **error_responses(400, 401)},
        summary="Your notifications, newest first",
    )
    def get(self, request):
        """The signed-in reader's notifications (replies, mentions, new comments in followed
        subjects, moderators' decisions, like milestones), newest first, cursor paged, with the
        unread count; ``unread=true`` lists only unread ones. Notifications about comments no longer
        published are left out."""
        params = query_params(request, InboxParams)
        page = queries.inbox(
            user_id=request.user.pk, limit=params["limit"], cursor=params.get("cursor"), unread_only=params["unread"]
        )
        return Response(
            {
                "items": page.items,
                "next_cursor": page.next_cursor,
                "unread_count": queries.unread_count(user_id=request.user.pk),
            }
        )


class UnreadCountView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses={200: UnreadOut, **error_responses(401)},
        summary="How many of your notifications are unread (the badge)",
    )
    def get(self, request):
        """The number behind the widget's badge: unread notifications about comments still
        published."""
        return Response({"unread_count": queries.unread_count(user_id=request.user.pk)})


class ReadView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=None,
        responses={200: UnreadOut, **error_responses(401, 404)},
        summary="Mark a notification read (idempotent)",
    )
    def put(self, request, notification_id: int):
        """Mark one of the reader's notifications read (again: no change) and answer the new unread
        count; another reader's notification is 404."""
        services.notification_mark_read(user=request.user, notification_id=notification_id)
        return Response({"unread_count": queries.unread_count(user_id=request.user.pk)})


class ReadAllView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=ReadAllIn,
        responses={200: ReadAllOut, **error_responses(400, 401)},
        summary="Mark all (or all up to an id) read",
    )
    def post(self, request):
        """Mark every unread notification read, or only those with ``id <= up_to_id`` (the newest
        the reader has seen, so one arriving meanwhile stays unread); answers how many were
        marked."""
        data = validated(ReadAllIn, request.data or {})
        marked = services.notifications_mark_all_read(user=request.user, up_to_id=data["up_to_id"])
        return Response({"marked": marked, "unread_count": queries.unread_count(user_id=request.user.pk)})


class PreferencesView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: PreferencesOut, **error_responses(401)}, summary="Your notification preferences")
    def get(self, request):
        """The reader's language for emails, whether they are told of like milestones, and per kind
        of notification whether it is emailed at once, in the daily digest or never."""
        return Response(queries.present_preferences(queries.preferences_of(user_id=request.user.pk)))

    @extend_schema(
        request=PreferencesIn,
        responses={200: PreferencesOut, **error_responses(400, 401)},
        summary="Change some of your notification preferences",
    )
    def patch(self, request):
        """Change any part of the preferences; an unknown kind or mode, or a value of the wrong
        type, is 400 and changes nothing."""
        data = validated(PreferencesIn, request.data)
        preferences = services.preferences_update(user=request.user, **data)
        return Response(queries.present_preferences(preferences))


class SubscriptionView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses={200: SubscriptionOut, **error_responses(401, 404)}, summary="Whether you follow or muted a subject"
    )
    def get(self, request, subject_id: int):
        """Whether the reader follows the subject (told of each new top-level comment), muted it (no
        email about it at all), or neither."""
        return Response({"state": queries.subscription_state(user_id=request.user.pk, subject_id=subject_id)})

    @extend_schema(
        request=SubscriptionIn,
        responses={200: SubscriptionOut, **error_responses(400, 401, 404)},
        summary="Follow (or mute) a subject",
    )
    def put(self, request, subject_id: int):
        """Follow the subject (``state`` defaults to ``subscribed``) or mute it."""
        data = validated(SubscriptionIn, request.data or {})
        return Response(
            {"state": services.subscription_set(user=request.user, subject_id=subject_id, state=data["state"])}
        )

    @extend_schema(
        request=None,
        responses={200: SubscriptionOut, **error_responses(401, 404)},
        summary="Neither follow nor mute a subject",
    )
    def delete(self, request, subject_id: int):
        """Back to the default for the subject: neither followed nor muted."""
        return Response({"state": services.subscription_set(user=request.user, subject_id=subject_id, state="none")})


class ModeratorEmailIn(ClosedObjectIn):
    held = serializers.ChoiceField(choices=HeldEmail.values, required=False)
    held_per_day = StrictIntegerField(required=False, allow_null=True, min_value=0, max_value=services.MAX_PER_DAY)


class ModeratorEmailOut(serializers.Serializer):
    site = serializers.CharField()
    held = serializers.ChoiceField(choices=HeldEmail.values)
    held_per_day = serializers.IntegerField(allow_null=True, help_text="null: default_held_per_day")
    default_held_per_day = serializers.IntegerField()


class SiteModeratorEmailView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        responses={200: ModeratorEmailOut, **error_responses(401, 403, 404)},
        summary="How a site's moderators are emailed about held comments (moderators)",
    )
    def get(self, request, site_key: str):
        """``held``: ``auto`` (one email per held comment until the site held ``held_per_day`` in
        the last 24 hours, then the daily digest), ``each``, ``digest`` or ``off``."""
        return Response(queries.site_moderator_email(site=site_by_key(site_key=site_key), user=request.user))

    @extend_schema(
        request=ModeratorEmailIn,
        responses={200: ModeratorEmailOut, **error_responses(400, 401, 403, 404)},
        summary="Change how a site's moderators are emailed about held comments (moderators)",
    )
    def patch(self, request, site_key: str):
        """What is left out stays as it is; ``held_per_day: null`` is the service's default."""
        data = validated(ModeratorEmailIn, request.data)
        site = site_by_key(site_key=site_key)
        services.site_moderator_email_update(site=site, actor=request.user, **data)
        return Response(queries.site_moderator_email(site=site, user=request.user))


class EmailAddressOut(serializers.Serializer):
    address = serializers.CharField(help_text='Where notification emails go; "" for nowhere.')
    offered = serializers.CharField(allow_null=True, help_text="The host's address, to turn emails on with.")
    from_host = serializers.BooleanField()


class EmailAddressView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: EmailAddressOut, **error_responses(401)}, summary="Where your emails go")
    def get(self, request):
        """Where the reader's notification emails go, and, for a reader signed in by their
        host's SSO with an ``email`` in its payload, that address to turn them on with."""
        return Response(queries.email_address_state(user=request.user))

    @extend_schema(
        request=None,
        responses={200: EmailAddressOut, **error_responses(401, 403)},
        summary="Email me at my host's address",
    )
    def put(self, request):
        """Consent to notification emails at the address the host's SSO names: it becomes the
        account's, and follows the host's later payloads. 403 when no host named one, or the
        account has an address of its own."""
        services.email_from_host_set(user=request.user, on=True)
        return Response(queries.email_address_state(user=request.user))

    @extend_schema(
        request=None,
        responses={200: EmailAddressOut, **error_responses(401, 403)},
        summary="Stop emails at my host's address",
    )
    def delete(self, request):
        """Withdraw that consent: the account has no address again, and nothing is emailed.
        403 unless the account's address is the host's."""
        services.email_from_host_set(user=request.user, on=False)
        return Response(queries.email_address_state(user=request.user))
