"""A subject is found by its site and key through its key's row (``comment_subject_key``, the
key the Citus plan can enforce): every way of making a subject makes the row with it, two
first readers of a new page at once make one subject, and the row goes with its subject or
site."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test import Client

from comments import services
from comments.models import Site, Subject, SubjectKey

from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory


def _keys(site: Site) -> set[tuple[str, int]]:
    return set(SubjectKey.objects.filter(site=site).values_list("key", "subject_id"))


def _subjects(site: Site) -> set[tuple[str, int]]:
    return set(Subject.objects.filter(site=site).values_list("key", "pk"))


@pytest.mark.django_db(transaction=True)
def test_eight_first_readers_of_a_new_page_at_once_make_one_subject():
    """Each reader in its own thread and connection, released at once: every one probes the
    key, finds nothing and makes a subject; the key's row lets one win, the others get its
    subject and leave none of their own."""
    site = SiteFactory()
    barrier = threading.Barrier(8)
    results, errors = [], []

    def first_reader():
        try:
            barrier.wait()
            subject, created = services.subject_get_or_create(site=site, key="article:new", title="New")
            results.append((subject.pk, created))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=first_reader) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    (subject_id,) = {pk for pk, _ in results}
    assert sorted(created for _, created in results) == [False] * 7 + [True]
    assert _subjects(site) == _keys(site) == {("article:new", subject_id)}


def test_a_subject_made_again_in_one_list_is_one_subject(db):
    site = SiteFactory()
    first, second = Subject(site=site, key="k"), Subject(site=site, key="k")
    made = services.subjects_create(site, [first, second])
    assert made == {"k": first.pk}
    assert _subjects(site) == _keys(site) == {("k", first.pk)}


def test_the_same_key_on_two_sites_is_two_subjects_each_with_its_row(db):
    one, other = SiteFactory(), SiteFactory()
    a, _ = services.subject_get_or_create(site=one, key="k")
    b, _ = services.subject_get_or_create(site=other, key="k")
    assert a.pk != b.pk
    assert (_keys(one), _keys(other)) == ({("k", a.pk)}, {("k", b.pk)})


def test_a_subjects_key_row_goes_with_it_and_with_its_site(db):
    site = SiteFactory()
    kept, deleted = SubjectFactory(site=site), SubjectFactory(site=site)
    CommentFactory(subject=deleted)
    deleted.delete()
    assert _keys(site) == {(kept.key, kept.pk)}
    site.delete()
    assert not SubjectKey.objects.exists()


def test_a_subject_added_in_the_admin_has_its_key_row_and_its_key_stays(db):
    site = SiteFactory()
    staff = Client()
    staff.force_login(UserFactory(is_staff=True, is_superuser=True))
    form = {"site": site.pk, "key": "article:7", "title": "Seven", "url": "", "mode": "flat", "state": "open"}
    assert staff.post("/admin/comments/subject/add/", form).status_code == 302
    subject = Subject.objects.get(site=site, key="article:7")
    assert _keys(site) == {("article:7", subject.pk)}

    again = staff.post("/admin/comments/subject/add/", {**form, "title": "Seven again"})
    assert "This site already has a subject with this key." in again.content.decode()
    assert Subject.objects.filter(site=site).count() == 1

    other = SiteFactory()
    changed = staff.post(
        f"/admin/comments/subject/{subject.pk}/change/", {**form, "site": other.pk, "key": "moved", "title": "7"}
    )
    assert changed.status_code == 302
    subject.refresh_from_db()
    assert (subject.site_id, subject.key, subject.title) == (site.pk, "article:7", "7")
    assert _keys(site) == {("article:7", subject.pk)}
