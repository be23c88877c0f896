"""Who may see which comment: the viewer, and the visibility rule in its two forms, side by
side: ``visible_sql`` (the list filter, evaluated by the database) and ``can_see`` (for one
loaded row). Both are written from the same constants (``SEEN_BY_ALL``, ``SEEN_BY_AUTHOR``,
``SEEN_BY_FRIENDS``, ``GONE_STATUSES``); tests/comments/test_visibility_twins.py checks that
they agree on every status, visibility and kind of viewer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from django.db import connection

from infra import replicas

from .. import paths, rowsql
from ..exceptions import OtherSiteSignIn
from ..models import GONE_STATUSES, Comment, Site, Status, User, Visibility
from ..rowsql import Sql

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser

# The rule. A live row is seen by everyone when published and public; by its author in any of
# these statuses; by its author's mutual followers when published for friends. A gone row
# (deleted, rejected) stays as a placeholder while its subtree holds anything the viewer sees.
SEEN_BY_ALL = (Status.PUBLISHED, Visibility.PUBLIC)
SEEN_BY_AUTHOR = (Status.PUBLISHED, Status.PENDING, Status.SHADOW)
SEEN_BY_FRIENDS = (Status.PUBLISHED, Visibility.FRIENDS)


def _literals(*values: str) -> str:
    """Code constants (status and visibility names) as SQL literals; never user input."""
    for value in values:
        assert value.isidentifier(), value
    return ", ".join(f"'{v}'" for v in values)


_COMMENT = connection.ops.quote_name(Comment._meta.db_table)
_GONE = _literals(*GONE_STATUSES)
_OWN_LIVE = _literals(*SEEN_BY_AUTHOR)
_PRIVATE = _literals(*(s for s in SEEN_BY_AUTHOR if s != SEEN_BY_ALL[0]))


@dataclass
class Viewer:
    """Who is looking, relative to one site."""

    user: User | None
    is_moderator: bool = False
    _friends: set[int] | None = field(default=None, repr=False)
    # Whether the viewer sees comments of the subject being read that the public does not
    # (read with the subject by ``subject_for_viewer``; True when not known).
    sees_private: bool = True

    @property
    def user_id(self) -> int | None:
        return self.user.pk if self.user is not None else None

    def friend_ids(self) -> set[int]:
        """The viewer's mutual followers: loaded with the subject or comment being read
        (``viewer_sql``), else by one query on first use."""
        if self.user is None:
            return set()
        if self._friends is None:
            sql, params = rowsql.friend_ids_text_sql(self.user.pk)
            with replicas.read_connection().cursor() as cursor:
                cursor.execute(f"SELECT {sql}", params)
                self._friends = rowsql.parse_id_text(cursor.fetchone()[0])
        return self._friends

    def is_friend(self, user_id: int | None) -> bool:
        return user_id is not None and user_id in self.friend_ids()


def authenticated(user: User | AnonymousUser | None) -> User | None:
    # Only a signed-in ``User`` is authenticated (``AnonymousUser.is_authenticated`` is False).
    return cast("User", user) if user is not None and getattr(user, "is_authenticated", False) else None


def acts_on_site(*, user: User | AnonymousUser | None, site: Site | int) -> bool:
    """Whether ``user``'s sign-in is good on the site (``site``: the row or its id). A bearer
    token issued by a site's sign-in (its SSO, an email link, a provider, a guest's form) is
    good on that site alone, so a site's operator, who can sign anyone in by its SSO, cannot
    act on another site (security.md, "Tenants"); a password's token and a session are good
    on every site, where each right is checked per site anyway."""
    scope = getattr(user, "token_site_id", None)
    return scope is None or scope == getattr(site, "pk", site)


def check_acts_on_site(*, user: User | AnonymousUser | None, site: Site | int) -> None:
    """Refuse (``OtherSiteSignIn``) a write of ``user`` on a site their sign-in is not good on:
    every write a reader makes (a comment, a reply, an edit, a delete, a like, a report, a
    subject) asks this first."""
    if not acts_on_site(user=user, site=site):
        raise OtherSiteSignIn()


def is_site_moderator(*, user: User | AnonymousUser | None, site: Site | int) -> bool:
    """Whether ``user`` moderates the site (``site``: the row or its id); staff moderate all.
    Nobody moderates a site their sign-in is not good on (``acts_on_site``)."""
    user = authenticated(user)
    if user is None or not acts_on_site(user=user, site=site):
        return False
    if user.is_staff:
        return True
    return Site.moderators.through.objects.filter(site_id=getattr(site, "pk", site), user_id=user.pk).exists()


def viewer_for(*, user: User | AnonymousUser | None, site: Site) -> Viewer:
    user = authenticated(user)
    return Viewer(user=user, is_moderator=is_site_moderator(user=user, site=site))


def viewer_sql(*, user: User | AnonymousUser | None, site_ref: str) -> tuple[str, list]:
    """Two SQL columns, whether ``user`` moderates the site at ``site_ref`` and the user's
    friend ids as text, so the viewer rides along with the row being read."""
    user = authenticated(user)
    if user is None:
        return "0 = 1, NULL", []
    friends, params = rowsql.friend_ids_text_sql(user.pk)
    # A sign-in good on one site alone moderates nothing elsewhere (``acts_on_site``).
    scope, scope_params = ("1 = 1", []) if user.token_site_id is None else (f"{site_ref} = %s", [user.token_site_id])
    if user.is_staff:
        return f"{scope}, {friends}", [*scope_params, *params]
    moderators = connection.ops.quote_name(Site.moderators.through._meta.db_table)
    return (
        f"{scope} AND EXISTS (SELECT 1 FROM {moderators} m WHERE m.site_id = {site_ref} AND m.user_id = %s), {friends}",
        [*scope_params, user.pk, *params],
    )


# --- the rule, for one loaded row ------------------------------------------------------------


def can_see(*, viewer: Viewer, comment: Comment | rowsql.CommentRow | rowsql.ReplyTarget) -> bool:
    """``visible_sql`` for one loaded row (a model or a list row)."""
    if viewer.is_moderator:
        return True
    if comment.status in GONE_STATUSES:
        if comment.descendant_count > 0:
            return True
        if viewer.user is None:
            return False
        # The rare case (a gone row without public descendants): ask the list filter itself.
        # Its subject named, the statement stays on that subject's shard (Citus).
        subject_id = None if isinstance(comment, rowsql.ReplyTarget) else comment.subject_id
        where = visible_sql(viewer=viewer, subject_id=subject_id)
        if subject_id is not None:
            where = rowsql.in_subject(subject_id) & where
        return bool(rowsql.fetch_ids([comment.pk], where))
    shown_as = (comment.status, comment.visibility)
    if shown_as == SEEN_BY_ALL:
        return True
    if viewer.user is None:
        return False
    if comment.author_id == viewer.user.pk and comment.status in SEEN_BY_AUTHOR:
        return True
    return shown_as == SEEN_BY_FRIENDS and viewer.is_friend(comment.author_id)


# --- the rule, as the list filter ------------------------------------------------------------


def private_sql(x: str = "c") -> str:
    """Rows (of alias ``x``) that some readers see and the public does not: the condition of
    the ``comment_private_authors`` index, written so that PostgreSQL's planner matches it."""
    return f"({x}.status IN ({_PRIVATE}) OR {x}.visibility = '{SEEN_BY_FRIENDS[1]}')"


def sees_private_sql(*, user_id: int, subject_id: int) -> tuple[str, list]:
    """Does ``user_id`` see comments of subject ``subject_id`` that the public does not: are
    they, or any of their mutual followers, the author of a pending, shadow or friends-only
    comment there? Index probes per author (``comment_private_authors``). The subject is a
    value, not the outer row's column: Citus then keeps the probes on its shard."""
    friends, params = rowsql.friends_sql(user_id)
    private = private_sql("p")
    return (
        f"(EXISTS (SELECT 1 FROM {_COMMENT} p WHERE p.subject_id = %s AND p.author_id = %s AND {private})"
        f" OR EXISTS (SELECT 1 FROM ({friends}) m JOIN {_COMMENT} p ON p.subject_id = %s"
        f" AND p.author_id = m.followee_id WHERE {private}))",
        [subject_id, user_id, *params, subject_id],
    )


def _seen_only_by(x: str, user_id: int, friend_ids: set[int]) -> tuple[str, list]:
    """Rows (of alias ``x``) visible to ``user_id`` beyond the public ones: their own, in any
    live status, and friends-only comments of mutual followers. The friends are a literal list
    (most readers have none, and then the clause goes), which plans far faster than the
    follow-table subqueries it replaces."""
    sql, params = f"({x}.author_id = %s AND {x}.status IN ({_OWN_LIVE}))", [user_id]
    if friend_ids:
        among, among_params = rowsql.any_of(f"{x}.author_id", sorted(friend_ids))
        status, visibility = SEEN_BY_FRIENDS
        sql += f" OR ({x}.status = '{status}' AND {x}.visibility = '{visibility}' AND {among})"
        params += among_params
    return f"({sql})", params


def visible_sql(*, viewer: Viewer, subject_id: int | None, x: str = "c") -> Sql:
    """Rows (of alias ``x``, of subject ``subject_id``) that ``viewer`` may see, placeholders
    included. A deleted or rejected comment stays as a placeholder while its subtree holds
    anything this viewer sees: public comments (``descendant_count``) or, for a signed-in
    viewer, their own and their friends' (a path-range ``EXISTS``, evaluated only for gone rows
    without public descendants; the subject is named there as a value, which Citus needs to
    keep a correlated subquery on the subject's shard; None: the row's own, rows of several
    subjects)."""
    if viewer.is_moderator:
        return Sql("1 = 1")
    status, visibility = SEEN_BY_ALL
    anonymous = (
        f"(({x}.status = '{status}' AND {x}.visibility = '{visibility}') "
        f"OR ({x}.status IN ({_GONE}) AND {x}.descendant_count > 0))"
    )
    if viewer.user is None:
        return Sql(anonymous)
    me, friends = viewer.user.pk, viewer.friend_ids()
    mine, mine_params = _seen_only_by(x, me, friends)
    below, below_params = _seen_only_by("d", me, friends)
    return Sql(
        f"({anonymous} OR {mine} OR ({x}.status IN ({_GONE}) AND {x}.descendant_count = 0 AND EXISTS ("
        f"SELECT 1 FROM {_COMMENT} d WHERE d.subject_id = {'%s' if subject_id is not None else f'{x}.subject_id'} "
        f"AND d.path > {x}.path AND d.path < ({x}.path || '{paths.SUBTREE_END}') AND {below})))",
        (*mine_params, *([subject_id] if subject_id is not None else []), *below_params),
    )
