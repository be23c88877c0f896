"""The retention job: authors' IP addresses and user agents go after
``PORTABILITY_IP_RETENTION_DAYS``."""

from __future__ import annotations

from django.conf import settings as django_settings

from comments import services as comment_services
from comments.models import CommentContent, Subject
from moderation.models import AuditEntry
from portability import services, tasks

from ..factories import SiteFactory, SubjectFactory, UserFactory
from .conftest import fixture_path, run_import


def ips(site) -> dict[str, str | None]:
    # By the subject, not through the comment: Django would join the content to the comment on the
    # id alone, which Citus cannot (a join of distributed tables pairs their distribution columns).
    subjects = Subject.objects.filter(site=site).values("pk")
    return dict(CommentContent.objects.filter(subject_id__in=subjects).values_list("body", "author_ip"))


def test_old_ip_addresses_and_user_agents_are_scrubbed_and_recent_ones_kept(db, settings):
    site = SiteFactory(key="blog")
    run_import(site, "disqus", fixture_path("disqus.xml"))  # 2019-2020, kept while retention is off
    recent = comment_services.comment_create(
        subject=SubjectFactory(site=site),
        author=UserFactory(),
        body="posted today",
        author_ip="192.0.2.44",
        user_agent="Mozilla/5.0 (today)",
    )
    assert ips(site)["First! **Great** post.\n\nSee [the docs](https://example.com/docs)."] == "203.0.113.5"

    settings.PORTABILITY_IP_RETENTION_DAYS = 90
    assert tasks.scrub_ip_addresses() == 2  # the two imported comments that had an address
    assert set(ips(site).values()) == {None, "192.0.2.44"}
    kept = CommentContent.objects.get(pk=recent.pk)
    assert (kept.author_ip, kept.user_agent) == ("192.0.2.44", "Mozilla/5.0 (today)")
    entry = AuditEntry.objects.get(site=site, action="ip_retention")
    assert "2 comments older than 90 days" in entry.reason
    assert tasks.scrub_ip_addresses() == 0  # nothing left to do: no second entry
    assert AuditEntry.objects.filter(action="ip_retention").count() == 1


def test_retention_off_keeps_everything(db, settings):
    site = SiteFactory(key="blog")
    run_import(site, "disqus", fixture_path("disqus.xml"))
    settings.PORTABILITY_IP_RETENTION_DAYS = 0
    assert services.ip_addresses_scrub() == 0
    assert "203.0.113.5" in ips(site).values()


def test_an_import_does_not_store_addresses_older_than_the_retention_period(db, settings):
    settings.PORTABILITY_IP_RETENTION_DAYS = 90
    site = SiteFactory(key="blog")
    run_import(site, "disqus", fixture_path("disqus.xml"))
    assert set(ips(site).values()) == {None}


def test_the_retention_job_runs_on_beat():
    assert (
        django_settings.CELERY_BEAT_SCHEDULE["portability.scrub_ip_addresses"]["task"]
        == "portability.scrub_ip_addresses"
    )
