"""Helpers of the portability suite: the fixture files, an import that returns its summary, and
the checks every import must pass (tree, ids, floors, counters, safe HTML)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from django.db.models import F, FilteredRelation, Q

from comments import paths
from comments.models import Comment, Site, Subject
from comments.queries import subject_ids_by_key
from comments.services import subject_reconcile_counters
from portability import services

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_path(name: str) -> str:
    return str(FIXTURES / name)


@pytest.fixture
def isso_db(tmp_path) -> str:
    """The Isso fixture (``fixtures/isso.sql``) as the SQLite file Isso keeps."""
    path = tmp_path / "comments.db"
    db = sqlite3.connect(path)
    db.executescript((FIXTURES / "isso.sql").read_text())
    db.commit()
    db.close()
    return str(path)


@pytest.fixture(autouse=True)
def _keep_imported_ips(settings):
    """The fixtures' comments are years old: with retention on, their IP addresses would not
    be kept (tests/portability/test_retention.py checks that)."""
    settings.PORTABILITY_IP_RETENTION_DAYS = 0


def run_import(site: Site, format: str, path: str, **kwargs) -> services.ImportSummary:
    return services.import_file(site=site, format=format, path=path, **kwargs)


def site_comments(site: Site):
    """The site's comments with their authors, subjects and contents. The content is read by a
    second statement (prefetched), or filtered on as ``own_content``, joined on the subject as
    well as the id: on Citus, a join of two distributed tables must pair their distribution
    columns, and Django joins a comment's content on the id alone."""
    return (
        Comment.objects.filter(subject__site=site)
        .annotate(own_content=FilteredRelation("content", condition=Q(content__subject_id=F("subject_id"))))
        .select_related("author", "subject")
        .prefetch_related("content")
    )


def by_body(site: Site, fragment: str) -> Comment:
    """The site's comment whose body holds ``fragment``."""
    return site_comments(site).get(own_content__body__contains=fragment)


def assert_consistent(site: Site) -> None:
    """What every import must leave: paths that say the tree, replies after their parents in id
    order, top-level comments in date order, floors 1..n in id order, counters the reconcile
    finds nothing to fix in, no script anywhere in the HTML, and every subject found by its
    key (its key's row made with it)."""
    comments = {c.pk: c for c in site_comments(site)}
    for c in comments.values():
        steps = paths.split_path(c.path)
        assert steps[-1] == c.pk and c.depth == len(steps) - 1
        if c.reply_to_id is None:
            assert c.depth == 0 and c.root_id is None
        else:
            parent = comments[c.reply_to_id]
            assert parent.subject_id == c.subject_id
            assert c.pk > parent.pk, "a reply sorts after the comment it answers"
            assert c.path.startswith(parent.path) or c.depth == parent.depth
            assert c.root_id == (parent.root_id or parent.pk)
        html = c.content.html.lower()
        for bad in ("<script", "onerror", "onclick", "onmouseover", "javascript:", "<img", "<iframe", "style="):
            assert bad not in html, (c.pk, html)
    subjects = list(Subject.objects.filter(site=site))
    assert subject_ids_by_key(site=site, keys=[s.key for s in subjects]) == {s.key: s.pk for s in subjects}
    for subject in subjects:
        rows = sorted((c for c in comments.values() if c.subject_id == subject.pk), key=lambda c: c.pk)
        tops = [c for c in rows if c.depth == 0]
        assert [c.floor for c in tops] == list(range(1, len(tops) + 1)), "top-level floors in time order"
        assert [c.created_at for c in tops] == sorted(c.created_at for c in tops), "ids ordered like dates"
        for top in tops:
            thread = [c for c in rows if c.root_id == top.pk]
            assert [c.floor for c in thread] == list(range(1, len(thread) + 1))
            assert top.reply_floor_seq == len(thread)
        report = subject_reconcile_counters(subject_id=subject.pk)
        assert not report.fixed_subject and not report.fixed_comments, report
        assert subject.floor_seq == len(tops)


def site_shape(site: Site) -> list[tuple]:
    """A site's comments as what a reader and a moderator see of them, ids aside: in tree order,
    each with its subject key, depth, floor, status, author name, times, body and html."""
    out = []
    for c in site_comments(site).order_by("subject__key", "path"):
        out.append(
            (
                c.subject.key,
                c.depth,
                c.floor,
                c.status,
                c.visibility,
                c.pinned,
                c.featured,
                c.author.public_name if c.author else None,
                c.created_at,
                c.edited_at,
                c.content.body,
                c.content.html,
                c.reply_count,
                c.descendant_count,
            )
        )
    return out


def counts(site: Site) -> tuple[int, int]:
    return Subject.objects.filter(site=site).count(), Comment.objects.filter(subject__site=site).count()
