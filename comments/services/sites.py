"""Sites and subjects: their settings, and subjects made once per key."""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db import connection, transaction

from infra import citus, pagecache

from .. import hooks
from ..exceptions import InvalidInput, PermissionDenied
from ..models import (
    Mode,
    Site,
    Subject,
    SubjectKey,
    SubjectState,
    User,
)
from ..queries import (
    check_acts_on_site,
    is_site_moderator,
    subject_id_by_key,
    subject_ids_by_key,
)
from .locks import pages_change

# --- sites ---------------------------------------------------------------------------------


def site_store(*, site: Site, fields: list[str] | None = None, moderators: Iterable[User] = ()) -> Site:
    """Save ``site`` (a new one, or ``fields`` of a stored one; every field when None) and add
    ``moderators``: the one way a site is written (the admin, ``create_site``, the console and
    the API's settings all come here), so every process's cached copy of the site and its embed
    pages goes now and again when the transaction commits (a reader may have cached it from the
    rows as they were in between)."""
    with transaction.atomic():
        site.save(update_fields=fields)
        if moderators:
            site.moderators.add(*moderators)
    _site_changed(site.key)
    return site


def site_delete(*, site: Site) -> None:
    """Delete ``site`` with everything of it; its cached copy goes as a change's does."""
    key = site.key
    site.delete()
    _site_changed(key)


def _site_changed(key: str) -> None:
    pagecache.site_changed(key)
    transaction.on_commit(lambda: pagecache.site_changed(key))


def site_set_allowed_origins(*, site: Site, origins: list[str]) -> Site:
    """The origins that may frame the site's widget and read its counts."""
    site.allowed_origins = [origin.rstrip("/") for origin in origins]
    return site_store(site=site, fields=["allowed_origins"])


def site_signin_update(
    *,
    site: Site,
    actor: User,
    sso: bool | None = None,
    email: bool | None = None,
    guests: bool | None = None,
    oidc: list[str] | None = None,
    link_email: bool | None = None,
    guest_moderation: str | None = None,
) -> Site:
    """Change how readers may sign in to the site (API.md, "Sign-in methods"); its moderators
    only. ``oidc`` names providers the service is configured with (ACCOUNTS_OIDC_PROVIDERS);
    ``guest_moderation`` (``pre`` or ``post``) is how guests' comments are moderated.
    Stored by ``site_store``, so cached copies of the site (and its embed pages) go."""
    if not is_site_moderator(user=actor, site=site):
        raise PermissionDenied("Only moderators of this site may change how readers sign in.")
    changes: dict[str, object] = {
        "signin_sso": sso,
        "signin_email": email,
        "signin_guests": guests,
        "signin_link_email": link_email,
        "guest_moderation": guest_moderation,
    }
    if oidc is not None:
        unknown = sorted(set(oidc) - set(settings.ACCOUNTS_OIDC_PROVIDERS))
        if unknown:
            raise InvalidInput(fields={"oidc": [f"Not a provider of this service: {', '.join(unknown)}."]})
        changes["signin_oidc"] = list(dict.fromkeys(oidc))
    changed = [name for name, value in changes.items() if value is not None and getattr(site, name) != value]
    for name in changed:
        setattr(site, name, changes[name])
    if changed:
        site_store(site=site, fields=changed)
    return site


# --- subjects ------------------------------------------------------------------------------


def subject_get_or_create(
    *, site: Site, key: str, title: str = "", url: str = "", creator: User | None = None
) -> tuple[Subject, bool]:
    """The subject ``site`` calls ``key``, made when it has none (``True``: made now). Found by
    its key's row, then by id: two probes that Citus routes to one shard each. ``creator``: the
    signed-in user who asks, whose sign-in must be good on the site."""
    if creator is not None:
        check_acts_on_site(user=creator, site=site)
    subject_id = subject_id_by_key(site=site, key=key)
    if subject_id is None:
        subject = Subject(site=site, key=key, title=title, url=url, mode=site.default_mode)
        subject_id = subjects_create(site, [subject])[key]
        if subject_id == subject.pk:
            return subject, True
    subject = Subject.objects.get(pk=subject_id)
    subject.site = site
    return subject, False


def subjects_create(site: Site, subjects: list[Subject]) -> dict[str, int]:
    """Make ``site``'s new ``subjects`` (unsaved) with their keys' rows, in one transaction,
    and return the id of the subject of each of their keys: the new subject's, or that of the
    subject made for the key first (by another request meanwhile, or earlier in the list),
    whose key's row wins; a new subject that lost is removed. The only way subjects are made:
    a subject always has its key's row.

    The rows' unique key decides between two first readers of a new page at once: the second
    insert of the key waits for the first transaction and then skips the row (``ON CONFLICT
    DO NOTHING``), and the key's row read after it is the winner's."""
    if not subjects:
        return {}
    with transaction.atomic():
        if len(subjects) > 1 and citus.is_coordinator(connection):
            _ids_drawn(subjects)
        Subject.objects.bulk_create(subjects, batch_size=_SUBJECTS_BATCH)
        SubjectKey.objects.bulk_create(
            [SubjectKey(site=site, key=s.key, subject_id=s.pk) for s in subjects],
            ignore_conflicts=True,
            batch_size=_SUBJECTS_BATCH,
        )
        keys = list({s.key: None for s in subjects})
        winners: dict[str, int] = {}
        for start in range(0, len(keys), _SUBJECTS_BATCH):
            winners.update(subject_ids_by_key(site=site, keys=keys[start : start + _SUBJECTS_BATCH]))
        losers = [s.pk for s in subjects if winners[s.key] != s.pk]
        if losers:
            Subject.objects.filter(pk__in=losers).delete()
    return winners


# Rows (and parameters of a lookup) per statement: below SQLite's limit on parameters.
_SUBJECTS_BATCH = 500


def _ids_drawn(subjects: list[Subject]) -> None:
    """Give the new ``subjects`` ids from their table's identity, in order, before they are
    inserted. On a Citus coordinator a multi-row INSERT returns its rows shard by shard, not
    in the order given, and ``bulk_create``, which hands out the returned ids in order, would
    give each subject another's id (and its key's row the wrong subject)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
            [Subject._meta.db_table, len(subjects)],
        )
        for subject, (pk,) in zip(subjects, sorted(cursor.fetchall()), strict=True):
            subject.pk = pk


def subject_update(
    *, subject: Subject, actor: User, mode: str | None = None, state: str | None = None, title: str | None = None
) -> Subject:
    """Change a subject's display mode, state or title; site moderators only. A mode is a view
    over the same paths, so switching it moves no row."""
    if not is_site_moderator(user=actor, site=subject.site):
        raise PermissionDenied("Only moderators of this site may change the subject.")
    changes: dict[str, object] = {}
    if mode is not None:
        changes["mode"] = Mode(mode)
    if state is not None:
        changes["state"] = SubjectState(state)
    if title is not None:
        changes["title"] = title
    if changes:
        Subject.objects.filter(pk=subject.pk).update(**changes)
        for name, value in changes.items():
            setattr(subject, name, value)
        pages_change(subject.pk)
    if state is not None:
        transaction.on_commit(
            lambda: hooks.subject_state_changed.send(sender=Subject, subject_id=subject.pk, state=subject.state)
        )
    return subject
