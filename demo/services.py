"""Writes of the demo: pointing the demo site at wherever its host page is served."""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

from comments import services
from comments.models import Site, Subject


@transaction.atomic
def demo_host_moved(*, site: Site, origins: list[str], article_path: Callable[[str], str]) -> None:
    """The demo host page now answers on ``origins`` (the first is its address): the site allows
    them to frame the widget, and each subject's URL is its article there (``article_path`` of
    its key), so links from the service (feeds, notifications) lead to a page that exists."""
    services.site_set_allowed_origins(site=site, origins=origins)
    for subject in Subject.objects.filter(site=site).only("pk", "key", "url"):
        url = origins[0] + article_path(subject.key)
        if subject.url != url:
            Subject.objects.filter(pk=subject.pk).update(url=url)
