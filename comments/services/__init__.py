"""Every write of the comment core, in modules by concern; views, API views, tasks and the other
apps call them from here.

* ``content``: what a comment may say and who may write where (the body's checks, mentions,
  the status a new comment starts in);
* ``storage``: comment storage (``comments_store``: new comments' rows, floors and counters,
  for a post as for an import's batch), the locks and the subject's cached pages;
* ``comment``: the writes of one comment (post, reply, status, flags, delete, edit);
* ``counters``: a subject's counters recomputed from its rows;
* ``sites``: sites and subjects;
* ``identity``: bearer tokens, users signed in by a site's SSO, follows.

Lock order, kept by every transaction that changes comment counters: the subject row first,
then comment rows. Two writers of one subject therefore queue on the subject row instead of
deadlocking on each other's comment rows.
"""

from .comment import comment_create, comment_edit, comment_set_flags, comment_set_status, comment_soft_delete
from .content import check_body, check_subject_open, has_visible_text
from .counters import ReconcileReport, subject_reconcile_counters
from .identity import follow_set, sso_user_upsert, token_issue, token_revoke
from .locks import comment_lock, pages_change, pages_change_many
from .sites import (
    site_delete,
    site_set_allowed_origins,
    site_signin_update,
    site_store,
    subject_get_or_create,
    subject_update,
    subjects_create,
)
from .storage import NewComment, Stored, comment_place, comments_store

__all__ = [
    "NewComment",
    "ReconcileReport",
    "Stored",
    "check_body",
    "check_subject_open",
    "comment_create",
    "comment_edit",
    "comment_lock",
    "comment_place",
    "comment_set_flags",
    "comment_set_status",
    "comment_soft_delete",
    "comments_store",
    "follow_set",
    "has_visible_text",
    "pages_change",
    "pages_change_many",
    "site_delete",
    "site_set_allowed_origins",
    "site_signin_update",
    "site_store",
    "sso_user_upsert",
    "subject_get_or_create",
    "subject_reconcile_counters",
    "subject_update",
    "subjects_create",
    "token_issue",
    "token_revoke",
]
