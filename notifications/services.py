"""Every write a reader makes to their notifications: reading them, their preferences, the
subjects they follow or mute. (What the fan-out writes is in ``fanout``; emails in ``mail``;
webhooks in ``webhooks``.)"""

from __future__ import annotations

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from comments.exceptions import InvalidInput, NotFound, PermissionDenied
from comments.models import Comment, Site, Subject, User
from comments.queries import is_site_moderator
from moderation.actions import comment_moderate

from .decision_links import DecisionLink
from .models import (
    DEFAULT_EMAIL,
    EmailMode,
    HeldEmail,
    Notification,
    Preferences,
    SiteModeratorEmail,
    Subscription,
    SubscriptionState,
    email_field,
)
from .queries import held_comment_of, host_email_of, preferences_of
from .unsubscribe import Scope


def notification_mark_read(*, user: User, notification_id: int) -> None:
    """Mark one of the reader's notifications read (again: no change); ``NotFound`` for
    another's."""
    updated = Notification.objects.filter(pk=notification_id, recipient=user, read_at__isnull=True).update(
        read_at=timezone.now()
    )
    if not updated and not Notification.objects.filter(pk=notification_id, recipient=user).exists():
        raise NotFound("Unknown notification.")


def notifications_mark_all_read(*, user: User, up_to_id: int | None = None) -> int:
    """Mark every unread notification of the reader read, or those up to ``up_to_id`` (the
    newest one the reader has seen: one that arrived meanwhile stays unread). Returns how many."""
    unread = Notification.objects.filter(recipient=user, read_at__isnull=True)
    if up_to_id is not None:
        unread = unread.filter(id__lte=up_to_id)
    return unread.update(read_at=timezone.now())


def preferences_update(
    *,
    user: User,
    language: str | None = None,
    like_milestones: bool | None = None,
    email: dict[str, str] | None = None,
) -> Preferences:
    """Change some of the reader's preferences (``email``: ``{kind: mode}`` for some kinds).
    What is already queued follows the new preference: the sender checks it again."""
    preferences = preferences_of(user_id=user.pk)
    if language is not None:
        if language not in dict(settings.LANGUAGES):
            raise InvalidInput(
                "Unknown language.",
                fields={"language": [f"Must be one of {[code for code, _ in settings.LANGUAGES]}."]},
            )
        preferences.language = language
    if like_milestones is not None:
        preferences.like_milestones = like_milestones
    for kind, mode in (email or {}).items():
        if kind not in DEFAULT_EMAIL:
            raise InvalidInput("Unknown kind.", fields={f"email.{kind}": [f"Must be one of {list(DEFAULT_EMAIL)}."]})
        if mode not in EmailMode.values:
            raise InvalidInput("Unknown email mode.", fields={f"email.{kind}": [f"Must be one of {EmailMode.values}."]})
        setattr(preferences, email_field(kind), mode)
    preferences.save()
    return preferences


def subscription_set(*, user: User, subject_id: int, state: str) -> str:
    """Follow a subject (``subscribed``: told of every new top-level comment), mute it
    (``muted``: no email about it at all), or neither (``none``). Idempotent; returns the state."""
    if state not in (*SubscriptionState.values, "none"):
        raise InvalidInput(
            "Unknown state.", fields={"state": [f"Must be one of {[*SubscriptionState.values, 'none']}."]}
        )
    if not Subject.objects.filter(pk=subject_id).exists():
        raise NotFound("Unknown subject.")
    if state == "none":
        Subscription.objects.filter(user=user, subject_id=subject_id).delete()
        return state
    try:
        with transaction.atomic():
            Subscription.objects.update_or_create(user=user, subject_id=subject_id, defaults={"state": state})
    except IntegrityError:  # a concurrent first choice: the later one wins
        Subscription.objects.filter(user=user, subject_id=subject_id).update(state=state)
    return state


def unsubscribe_apply(*, scope: Scope) -> dict:
    """What a one-click unsubscribe link turns off (``unsubscribe.scope_of``): the kinds it names
    are emailed ``never`` again, or the subject it names is muted (no email about its thread).
    Idempotent; emails already queued follow at once (the sender checks again). ``NotFound``
    for a recipient or subject gone since. Returns ``{"kinds": [...]}`` or ``{"subject": id}``."""
    user = User.objects.filter(pk=scope.user_id).first()
    if user is None:
        raise NotFound("Unknown recipient.")
    if scope.subject_id is not None:
        subscription_set(user=user, subject_id=scope.subject_id, state=SubscriptionState.MUTED)
        return {"subject": scope.subject_id}
    preferences_update(user=user, email=dict.fromkeys(scope.kinds, EmailMode.NEVER))
    return {"kinds": list(scope.kinds)}


UNCHANGED = object()  # an argument left out, where None is a value
MAX_PER_DAY = 100_000
EMAIL_CHANNEL = "email"  # the audit entry's channel of a decision taken by an email's link


def held_comment_decide(*, link: DecisionLink) -> Comment:
    """Take a decision link's decision (approve or reject) as its moderator, through the
    moderation service every console and API decision goes through (the audit entry, with the
    ``email`` channel, the author's notification, webhooks, counters), and only while the review
    task the email was sent for is open: ``moderation.actions.AlreadyDecided`` once the comment
    was decided, by this link or any other way. The link's other checks are
    ``queries.held_comment_of``'s."""
    moderator = held_comment_of(link=link).moderator
    return comment_moderate(
        comment_id=link.comment_id,
        actor=moderator,
        action=link.decision,
        channel=EMAIL_CHANNEL,
        if_task_open=link.task_id,
    )


def site_moderator_email_update(
    *, site: Site, actor: User, held: str | None = None, held_per_day: object = UNCHANGED
) -> SiteModeratorEmail:
    """Change how a site's moderators are emailed about held comments (``held``: ``auto``,
    ``each``, ``digest`` or ``off``; ``held_per_day``: where ``auto`` turns to the digest,
    ``None`` for ``NOTIFICATIONS_HELD_PER_DAY``); its moderators only. What is left out stays."""
    if not is_site_moderator(user=actor, site=site):
        raise PermissionDenied("Only moderators of this site may change how its moderators are emailed.")
    if held is not None and held not in HeldEmail.values:
        raise InvalidInput("Unknown choice.", fields={"held": [f"Must be one of {HeldEmail.values}."]})
    per_day_ok = held_per_day is UNCHANGED or held_per_day is None or _a_count(held_per_day)
    if not per_day_ok:
        raise InvalidInput(fields={"held_per_day": [f"Must be a whole number from 0 to {MAX_PER_DAY}, or null."]})
    row, _created = SiteModeratorEmail.objects.get_or_create(site=site)
    if held is not None:
        row.held = held
    if held_per_day is not UNCHANGED:
        row.held_per_day = held_per_day  # type: ignore[assignment]  # an int or None, checked above
    row.save()
    return row


def _a_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_PER_DAY


def email_from_host_set(*, user: User, on: bool) -> None:
    """The reader's consent to notification emails at the address their host's SSO names (issue
    39): ``on`` makes it the account's address, so that emails go there under the rules of an
    address given at e-mail sign-in (each kind by the reader's preferences, an unsubscribe link
    in every message), and it then follows the host's payloads (``sso_user_upsert``); off clears
    it. Nothing is ever sent to an address the host named before the reader turned this on.
    PermissionDenied when no host named one, or the account's address is its own (e-mail
    sign-in, a provider's): this turns off only what it turned on."""
    host = host_email_of(user=user)
    if not host:
        raise PermissionDenied("No address of yours came with your sign-in.")
    if on:
        if user.email and user.email != host:
            raise PermissionDenied("Your emails already go to the address of your account.")
        address = host
    else:
        if user.email != host:
            raise PermissionDenied("Your emails go to the address of your account, not the host's.")
        address = ""
    User.objects.filter(pk=user.pk).update(email=address)
    user.email = address
