"""``comments_store``, the one writer of new comments (posts, replies, imports): floors, paths,
counters and pins come out the same whichever way the rows are written.

On PostgreSQL a post is one data-modifying statement (``COMMENTS_ONE_STATEMENT_POST``); the
differential test stores one scenario with it on and off and compares every row it left. SQLite
has neither: the general path serves it, and the same scenario is checked against the reconcile
and the rules it must keep."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from psycopg import sql

from comments import paths, services
from comments.exceptions import SubjectClosed
from comments.ids import new_id
from comments.models import Comment, CommentContent, Status, Subject, SubjectState, Visibility, is_counted
from comments.services import NewComment, comment_place, comments_store, subject_reconcile_counters
from comments.services.storage import COMMENT_COLUMNS, CONTENT_COLUMNS
from infra import citus

from ..factories import SiteFactory, SubjectFactory, UserFactory

POSTGRESQL = connection.vendor == "postgresql"
# COMMENTS_ONE_STATEMENT_POST; on SQLite both take the general path, and must agree all the same.
MODES = [True, False]
MAX_DEPTH = 3
PINNED_LIMIT = 2
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def product(settings):
    settings.COMMENTS_MAX_DEPTH = MAX_DEPTH
    settings.COMMENTS_PINNED_LIMIT = PINNED_LIMIT
    settings.MODERATION_BURST_LIMIT = 10**6  # every post as written, none held for a burst
    return settings


def test_the_columns_written_are_every_column_of_the_models():
    """The store's one column list names every column of the rows but the generated one."""
    for model, columns in ((Comment, COMMENT_COLUMNS), (CommentContent, CONTENT_COLUMNS)):
        stored = [f.column for f in model._meta.concrete_fields if not getattr(f, "generated", False)]
        assert sorted(stored) == sorted(name for name, _ in columns), model


class _Scenario:
    """One run of the scenario on its own site; every comment named, every id kept by name."""

    def __init__(self, index: int):
        self.site = SiteFactory(key=f"storage-{index}-{new_id()}")
        self.reader, self.moderator = UserFactory(), UserFactory()
        self.site.moderators.add(self.moderator)
        self.open = SubjectFactory(site=self.site, key="open")
        self.closed = SubjectFactory(site=self.site, key="closed", state=SubjectState.CLOSED)
        self.closing = SubjectFactory(site=self.site, key="closing")
        self.ids: dict[str, int] = {}
        self.unpinned: list[str] = []

    def _at(self) -> datetime:
        return T0 + timedelta(minutes=len(self.ids))

    def post(self, name, subject, *, to=None, by=None, visibility=Visibility.PUBLIC) -> Comment:
        comment = services.comment_create(
            subject=subject,
            author=by or self.reader,
            body=f"{name}, said in plain words",
            reply_to_id=self.ids[to] if to else None,
            visibility=visibility,
            author_ip="203.0.113.9",
            user_agent="test agent",
            created_at=self._at(),
        )
        self.ids[name] = comment.id
        return comment

    def imported(self, subject, items) -> None:
        """An import's batch: ``(name, answers, status, asks pinned, asks featured, placed by
        the caller)`` each, parents first, stored as the importer stores (closed subjects
        too)."""
        batch: dict[str, Comment] = {}
        new = []
        for name, to, status, pinned, featured, placed in items:
            comment = Comment(
                id=new_id(),
                subject_id=subject.pk,
                author_id=self.reader.pk,
                floor=0,
                status=status,
                visibility=Visibility.PUBLIC,
                created_at=self._at(),
                edited_at=self._at() + timedelta(seconds=30),
            )
            self.ids[name] = comment.id
            parent = batch.get(to) or (Comment.objects.get(pk=self.ids[to]) if to else None)
            if placed:
                assert parent is None or parent.path, "a comment is placed under a placed one"
                comment_place(comment, parent)
            else:  # left to the store
                comment.reply_to_id = parent.id if parent else None
            batch[name] = comment
            content = CommentContent(
                comment=comment, subject_id=subject.pk, body=name, html=f"<p>{name}</p>", mentions=[], user_agent=""
            )
            new.append(NewComment(comment, content, is_counted(status, Visibility.PUBLIC), pinned, featured))
        with transaction.atomic():
            stored = comments_store(new, closed_ok=True)
        names = {pk: name for name, pk in self.ids.items()}
        self.unpinned += [names[item.comment.id] for item in stored.unpinned]

    def run(self) -> None:
        P, PENDING = Status.PUBLISHED, Status.PENDING
        # A thread down to the depth cap and past it (stored as siblings at the cap).
        self.post("a", self.open)
        self.post("b", self.open)
        self.post("a1", self.open, to="a")
        self.post("a11", self.open, to="a1")
        self.post("a111", self.open, to="a11")  # at the cap
        self.post("a1111", self.open, to="a111")  # past it: a111's sibling
        self.post("a11111", self.open, to="a1111")
        # Uncounted comments (friends only), one with a counted reply.
        self.post("a2", self.open, to="a", visibility=Visibility.FRIENDS)
        self.post("a21", self.open, to="a2", by=self.reader)
        self.post("c", self.open, visibility=Visibility.FRIENDS)
        self.post("b1", self.open, to="b", by=self.moderator)
        services.comment_set_status(comment_id=self.ids["b1"], to_status=PENDING)
        self.post("b2", self.open, to="b")
        # An import: pinned beyond the limit, replies inside the batch and to comments stored
        # before it (one at the cap), pending ones, places given and left to the store.
        self.imported(
            self.open,
            [
                ("p1", None, P, True, False, True),
                ("p2", None, P, True, True, False),
                ("p3", None, P, True, False, True),  # the limit is two
                ("p1r", "p1", P, False, False, False),
                ("p1rr", "p1r", PENDING, False, True, False),
                ("p1rrr", "p1rr", P, False, False, False),
                ("p3r", "p3", P, False, False, True),
                ("b3", "b", P, False, False, True),
                ("a111r", "a11111", P, False, False, False),
                ("d", None, PENDING, True, True, True),
            ],
        )
        self.imported(self.open, [("p4", None, P, True, False, True), ("e", None, P, False, True, False)])
        # A closed subject: a reader stores nothing, a moderator and an import do.
        with pytest.raises(SubjectClosed):
            self.post("x", self.closed)
        self.post("m", self.closed, by=self.moderator)
        self.post("m1", self.closed, to="m", by=self.moderator)
        self.imported(self.closed, [("i", None, P, False, False, True), ("m2", "m", P, False, False, False)])
        # Closed between the caller's read and the store: the check under the lock refuses
        # the reader (a post and a reply), lets the moderator in.
        self.post("k", self.closing)
        stale = Subject.objects.get(pk=self.closing.pk)
        Subject.objects.filter(pk=self.closing.pk).update(state=SubjectState.CLOSED)
        with pytest.raises(SubjectClosed):
            self.post("y", stale)
        with pytest.raises(SubjectClosed):
            self.post("z", stale, to="k")
        self.post("k1", stale, to="k", by=self.moderator)
        self.post("n", stale, by=self.moderator)

    def dump(self) -> dict:
        """Every row the scenario left, ids by name: subjects, comments, contents."""
        names = {pk: name for name, pk in self.ids.items()}
        subjects = {self.open.pk: "open", self.closed.pk: "closed", self.closing.pk: "closing"}
        users = {self.reader.pk: "reader", self.moderator.pk: "moderator"}
        dump: dict = {
            subjects[s.pk]: (s.comment_count, s.root_count, s.floor_seq, s.state)
            for s in Subject.objects.filter(pk__in=subjects)
        }
        # Contents read by subject beside their comments (Citus joins the two only on subject_id).
        contents = {t.comment_id: t for t in CommentContent.objects.filter(subject_id__in=subjects)}
        for c in Comment.objects.filter(subject_id__in=subjects):
            row = {f.attname: getattr(c, f.attname) for f in Comment._meta.concrete_fields}
            row.update(
                id=names[c.id],
                subject_id=subjects[c.subject_id],
                author_id=users[c.author_id],
                reply_to_id=names.get(c.reply_to_id),
                root_id=names.get(c.root_id),
                path="/".join(names[step] for step in paths.split_path(c.path)),
            )
            content = contents[c.id]
            row["content"] = (content.subject_id == c.subject_id, content.body, content.html, content.mentions)
            row["content"] += (content.author_ip, content.user_agent)
            dump[names[c.id]] = row
        return dump


def _run(settings, index: int, one_statement: bool) -> _Scenario:
    settings.COMMENTS_ONE_STATEMENT_POST = one_statement
    scenario = _Scenario(index)
    scenario.run()
    return scenario


@pytest.mark.django_db(transaction=True)  # posts in autocommit, as requests make them: commits of their own
def test_one_scenario_stores_the_same_rows_with_the_fast_paths_on_and_off(product):
    runs = [_run(product, i, mode) for i, mode in enumerate(MODES)]
    dumps = [run.dump() for run in runs]
    for mode, dump in zip(MODES[1:], dumps[1:], strict=True):
        assert dump == dumps[0], f"one statement = {mode} differs from {MODES[0]}"
    rows = dumps[0]
    # What every mode agrees on is right: floors in order, places in the tree, counters, pins.
    assert rows["open"] == (19, 7, 9, "open")  # 9 top-level (a b c p1 p2 p3 d p4 e), 7 counted; 12 replies
    assert rows["closed"] == (4, 2, 2, "closed") and rows["closing"] == (3, 2, 2, "closed")
    assert "x" not in rows and "y" not in rows and "z" not in rows
    floors = {name: rows[name]["floor"] for name in ("a", "b", "c", "p1", "p2", "p3", "d", "p4", "e")}
    assert floors == {"a": 1, "b": 2, "c": 3, "p1": 4, "p2": 5, "p3": 6, "d": 7, "p4": 8, "e": 9}
    thread_a = ["a1", "a11", "a111", "a1111", "a11111", "a2", "a21", "a111r"]
    assert [rows[name]["floor"] for name in thread_a] == list(range(1, 9))
    assert [rows[name]["floor"] for name in ("b1", "b2", "b3")] == [1, 2, 3]
    assert rows["b"]["reply_floor_seq"] == 3 and rows["p1"]["reply_floor_seq"] == 3
    assert [rows[name]["depth"] for name in ("a111", "a1111", "a11111", "a111r")] == [3, 3, 3, 3]
    assert rows["a11111"]["path"] == "a/a1/a11/a11111" and rows["a11111"]["reply_to_id"] == "a1111"
    assert rows["p1rrr"]["path"] == "p1/p1r/p1rr/p1rrr" and rows["p1rrr"]["root_id"] == "p1"
    assert (rows["p3r"]["path"], rows["p3r"]["floor"], rows["p3"]["reply_count"]) == ("p3/p3r", 1, 1)
    # a's thread: a1 a11 a111 a1111 a11111 a21 a111r counted (a2 is friends only).
    assert (rows["a"]["reply_count"], rows["a"]["descendant_count"]) == (7, 7)
    assert (rows["a2"]["reply_count"], rows["a2"]["descendant_count"]) == (1, 1)
    assert (rows["a11"]["reply_count"], rows["a11"]["descendant_count"]) == (1, 4)
    assert (rows["a1111"]["reply_count"], rows["a11111"]["reply_count"]) == (1, 1)
    assert (rows["p1"]["reply_count"], rows["p1"]["descendant_count"]) == (2, 2)  # p1r, p1rrr
    assert (rows["p1rr"]["reply_count"], rows["b"]["reply_count"]) == (1, 2)  # b1 pending
    pinned = {name for name, row in rows.items() if isinstance(row, dict) and row["pinned"]}
    featured = {name for name, row in rows.items() if isinstance(row, dict) and row["featured"]}
    assert pinned == {"p1", "p2"} and featured == {"p2", "e"}  # pending ones get neither
    assert runs[0].unpinned == ["p3", "p4"]
    assert rows["m2"]["path"] == "m/m2" and rows["m2"]["floor"] == 2
    for run in runs:
        for subject in (run.open, run.closed, run.closing):
            report = subject_reconcile_counters(subject_id=subject.pk)
            assert (report.fixed_subject, report.fixed_comments) == (False, 0)


@pytest.mark.skipif(not POSTGRESQL, reason="the one-statement post is PostgreSQL's")
@pytest.mark.django_db
@pytest.mark.parametrize("one_statement", [True, False])
def test_a_post_is_one_statement_on_the_fast_path_and_a_few_on_the_general_one(product, one_statement):
    product.COMMENTS_ONE_STATEMENT_POST = one_statement
    subject, user = SubjectFactory(), UserFactory()
    top = services.comment_create(subject=subject, author=user, body="first")
    services.comment_create(subject=subject, author=user, body="warm", reply_to_id=top.id)
    made = []
    for reply_to in (None, top.id):
        comment = Comment(id=new_id(), subject_id=subject.pk, author_id=user.pk, floor=0, created_at=T0)
        comment_place(comment, top if reply_to else None)
        content = CommentContent(comment=comment, subject_id=subject.pk, body="b", html="<p>b</p>", mentions=[])
        with CaptureQueriesContext(connection) as captured:
            comments_store([NewComment(comment, content, True)], closed_ok=False)
        made.append([q["sql"] for q in captured.captured_queries if "SAVEPOINT" not in q["sql"].upper()])
    if one_statement and not citus.is_coordinator(connection):
        assert [len(statements) for statements in made] == [1, 1], made
    else:  # off, or on a Citus coordinator, which cannot send the one statement to one shard
        # The subject row (floor, counters); the thread's rows for a reply; then both rows.
        assert [len(statements) for statements in made] == [3, 4], made


@pytest.mark.skipif(not POSTGRESQL, reason="psycopg's composed statements are PostgreSQL's")
@pytest.mark.django_db
def test_django_s_cursor_takes_a_composed_statement_with_named_parameters():
    """What the store relies on when it passes statements as text instead: psycopg would take
    a ``Composed`` through Django's cursor as well."""
    with connection.cursor() as cursor:
        cursor.execute(sql.SQL("SELECT {} + {}").format(sql.Placeholder("a"), sql.Placeholder("a")), {"a": 20})
        assert cursor.fetchone() == (40,)


@pytest.mark.django_db
def test_a_batch_into_a_subject_closed_meanwhile_stores_nothing_unless_closed_ok(product):
    subject, user = SubjectFactory(state=SubjectState.CLOSED), UserFactory()

    def batch():
        new = []
        for _ in range(3):
            comment = Comment(id=new_id(), subject_id=subject.pk, author_id=user.pk, floor=0, created_at=T0)
            comment_place(comment, None)
            content = CommentContent(comment=comment, subject_id=subject.pk, body="b", html="", mentions=[])
            new.append(NewComment(comment, content, True))
        return new

    with pytest.raises(SubjectClosed):
        comments_store(batch(), closed_ok=False)
    assert not Comment.objects.filter(subject=subject).exists()
    comments_store(batch(), closed_ok=True)
    subject.refresh_from_db()
    assert (subject.comment_count, subject.root_count, subject.floor_seq) == (3, 3, 3)


# --- any sequence of writes leaves nothing for the reconcile to repair -------------------------

_STATUSES = [Status.PUBLISHED, Status.PENDING, Status.REJECTED]
_step = st.one_of(
    st.tuples(st.just("post"), st.integers(-1, 40), st.booleans()),
    st.tuples(
        st.just("import"),
        st.lists(
            st.tuples(st.integers(-1, 60), st.sampled_from(_STATUSES), st.booleans(), st.booleans()),
            min_size=1,
            max_size=8,
        ),
    ),
    st.tuples(st.just("status"), st.integers(0, 40), st.sampled_from(_STATUSES)),
)


@hsettings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_step, min_size=1, max_size=10), one_statement=st.booleans())
def test_any_sequence_of_posts_imports_and_status_changes_leaves_nothing_to_repair(db, product, steps, one_statement):
    """Posts (replies to any comment, friends-only ones among them), imports' batches (replies
    inside the batch and to comments stored before, pending ones, pins asked) and status
    changes in any order: the reconcile finds nothing to fix, floors stay unique and
    gap-free, no subject holds more pins than its limit."""
    product.COMMENTS_ONE_STATEMENT_POST = one_statement
    subject, author = SubjectFactory(), UserFactory()
    made: list[Comment] = []

    def pick(index: int) -> Comment | None:
        return Comment.objects.get(pk=made[index % len(made)].pk) if made and index >= 0 else None

    for step in steps:
        if step[0] == "post":
            parent = pick(step[1])
            if parent is not None and parent.status != Status.PUBLISHED:
                parent = None  # a reader replies to what they see
            visibility = Visibility.FRIENDS if step[2] else Visibility.PUBLIC
            made.append(
                services.comment_create(
                    subject=subject,
                    author=author,
                    body="post",
                    reply_to_id=parent.id if parent else None,
                    visibility=visibility,
                )
            )
        elif step[0] == "import":
            new: list[NewComment] = []
            for target, status, pinned, placed in step[1]:
                pool = made + [item.comment for item in new]
                parent = pool[target % len(pool)] if pool and target >= 0 else None
                comment = Comment(id=new_id(), subject_id=subject.pk, author_id=author.pk, floor=0, status=status)
                comment.created_at = T0
                if parent is None or (placed and parent.path):  # the caller places under a placed parent
                    comment_place(comment, parent)
                else:
                    comment.reply_to_id = parent.id
                content = CommentContent(comment=comment, subject_id=subject.pk, body="i", html="", mentions=[])
                new.append(NewComment(comment, content, is_counted(status, Visibility.PUBLIC), pinned=pinned))
            comments_store(new, closed_ok=True)
            made += [item.comment for item in new]
        elif made:
            services.comment_set_status(comment_id=made[step[1] % len(made)].id, to_status=step[2])
    report = subject_reconcile_counters(subject_id=subject.pk)
    assert (report.fixed_subject, report.fixed_comments) == (False, 0)
    rows = list(Comment.objects.filter(subject=subject).values("id", "depth", "root_id", "floor", "pinned"))
    top = sorted(r["floor"] for r in rows if r["depth"] == 0)
    assert top == list(range(1, len(top) + 1))
    for root in {r["root_id"] for r in rows if r["root_id"]}:
        thread = sorted(r["floor"] for r in rows if r["root_id"] == root)
        assert thread == list(range(1, len(thread) + 1))
    assert sum(r["pinned"] for r in rows) <= PINNED_LIMIT
    subject.refresh_from_db()
    assert subject.floor_seq == len(top)
