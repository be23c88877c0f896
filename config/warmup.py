"""What a web worker loads before it takes its first request (``config/gunicorn.py`` calls
``warm_up`` once the application is loaded).

Django and DRF load much lazily, on the first request that needs it: the URLconf and every
view module it imports, the URL patterns' compiled expressions, DRF's renderers, parsers and
authentication classes, the templates. Measured on the benchmark's server, a new worker's
first request took about 100 ms and its first API page 40-80 ms more, so the first readers
after every deploy or restart waited for imports. Loading them at start moves that out of any
request; nothing here touches the database, and the caches are only connected to (a failure
is left to the first request, as without a warm-up).
"""

from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger("config.warmup")

# The templates readers' pages render (the widget's page, its fragments, the home page).
TEMPLATE_DIRECTORY = "comments"


def warm_up() -> None:
    from django.template import Engine, TemplateDoesNotExist
    from django.template.loader import get_template
    from django.urls import get_resolver
    from rest_framework.settings import api_settings

    from comments import health

    resolver = get_resolver()
    resolver.url_patterns  # noqa: B018 - imports the URLconf and every view module
    resolver.reverse_dict  # noqa: B018 - compiles every pattern's expression
    for name in api_settings.defaults:
        getattr(api_settings, name)  # imports the classes DRF names by dotted path
    for directory in Engine.get_default().dirs:
        for template in sorted((Path(directory) / TEMPLATE_DIRECTORY).glob("*.html")):
            try:
                get_template(f"{TEMPLATE_DIRECTORY}/{template.name}")  # compiled and kept (cached loader)
            except TemplateDoesNotExist:
                logger.warning("warm-up: template %s not found", template.name)
    _connect_caches()
    health.process_warmed()  # /readyz may answer 200 from now on


def _connect_caches() -> None:
    """A connection to the shared cache and to the likes' Redis now, in the pools every thread
    of the worker takes from."""
    from django.core.cache import cache

    from infra import redislink, sharedcache

    sharedcache.call(lambda: cache.get("warm-up"), None)
    likes = redislink.client()
    if likes is not None:
        try:
            likes.ping()
        except redislink.ERRORS:  # the first like finds out, as it would without a warm-up
            logger.warning("warm-up: the likes' Redis did not answer")
