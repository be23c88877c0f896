"""Settings of ``python -m bench.trees``: the application's own (``config.settings``, from the
same environment variables) with django-mptt and the benchmark's mptt model
(``bench/treeapp``) installed. django-mptt is in the ``bench`` extra, never a dependency of the
application."""

from config.settings import *  # noqa: F403
from config.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "mptt", "bench.treeapp"]
