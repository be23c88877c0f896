"""Every model names itself by what it is (the admin's titles, delete confirmations and history
show ``str()``), from its own columns: no query to name a row."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from accounts.models import SignInHandoff
from comments.models import ApiToken, CommentContent, ExternalIdentity, Follow, IdWorkerLease
from likes.models import Like, StaleLikeState
from moderation.models import AuditEntry, Report, ReviewTask, Sanction
from notifications.models import Preferences, Subscription
from portability.models import ImportedItem, SitePrivacy, StagedRecord

AT = datetime(2026, 11, 27, 16, 30, tzinfo=UTC)

NAMES = [
    (
        SignInHandoff(via="github", via_label="GitHub", expires_at=AT),
        "hand-off of a sign-in with GitHub, until 2026-11-27 16:30",
    ),
    (ApiToken(user_id=7, expires_at=AT), "token of user 7, until 2026-11-27 16:30"),
    (CommentContent(comment_id=42, subject_id=3), "text of comment 42"),
    (ExternalIdentity(site_id=2, external_id="reader-9"), "reader-9 of site 2"),
    (Follow(follower_id=1, followee_id=2), "user 1 follows user 2"),
    (IdWorkerLease(pid=1234, host="app-1"), "ids of process 1234 on app-1"),
    (Like(comment_id=42, user_id=7, subject_id=3, active=True), "user 7 likes comment 42"),
    (Like(comment_id=42, user_id=7, subject_id=3, active=False), "user 7 no longer likes comment 42"),
    (StaleLikeState(comment_id=42, subject_id=3), "like state of comment 42, behind the database"),
    (AuditEntry(action="reject", actor_id=5, comment_id=42), "reject by user 5 on comment 42"),
    (AuditEntry(action="words.update"), "words.update by the system"),
    (Report(comment_id=42, user_id=7, subject_id=3, reason="spam"), "report of comment 42 by user 7 (spam)"),
    (ReviewTask(comment_id=42, subject_id=3, site_id=2, state="open"), "review of comment 42 (open)"),
    (Sanction(site_id=2, user_id=7, kind="ban"), "ban of user 7 on site 2"),
    (Preferences(user_id=7), "notification settings of user 7"),
    (Subscription(user_id=7, subject_id=3, state="muted"), "user 7: muted to subject 3"),
    (ImportedItem(site_id=2, source="disqus", kind="c", source_id="d-1", target_id=42), "disqus comment d-1 -> 42"),
    (StagedRecord(run_id=5, kind="t", source_id="t-1"), "thread t-1 of import 5"),
    (SitePrivacy(site_id=2, erasure="placeholder"), "privacy of site 2: erasure by placeholder"),
]


@pytest.mark.parametrize(("row", "name"), NAMES, ids=[f"{type(r).__name__}-{i}" for i, (r, _) in enumerate(NAMES)])
def test_a_row_is_named_by_what_it_is(row, name, db, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert str(row) == name
