"""What a process keeps on its own disk, under ``COMMENTS_VAR_DIR`` (``var/`` of the checkout):
the embedded default's SQLite database and secret key, and the collected static files.

Importing the settings only reads these paths. The programs (``manage.py`` and the WSGI and
ASGI entry points) call ``prepare()`` before Django loads the settings, so the folders and the
embedded default's secret key exist by then, and a test or a tool that imports the settings
writes nothing. (A Celery worker needs neither: without a broker tasks run in the process that
queues them.)"""

from __future__ import annotations

import secrets
from pathlib import Path

from .env import env_bool, env_str

BASE_DIR = Path(__file__).resolve().parent.parent


def var_dir() -> Path:
    return Path(env_str("COMMENTS_VAR_DIR", str(BASE_DIR / "var")))


def static_root() -> Path:
    return Path(env_str("DJANGO_STATIC_ROOT", str(var_dir() / "static")))


def embedded() -> bool:
    """No production part named: SQLite, the local-memory cache and eager Celery."""
    return not (env_str("DATABASE_URL") or env_str("REDIS_URL") or env_str("CELERY_BROKER_URL"))


def may_keep_secret_key() -> bool:
    """A secret key kept in ``var/`` serves the embedded default and debugging; anywhere else
    ``DJANGO_SECRET_KEY`` must say it."""
    return embedded() or env_bool("DJANGO_DEBUG", False)


def _secret_key_file() -> Path:
    return var_dir() / "secret_key"


def kept_secret_key() -> str | None:
    """The key ``prepare()`` made, stable per checkout so sessions and cursors survive a
    restart of the demo server; ``None`` when there is none."""
    try:
        return _secret_key_file().read_text().strip() or None
    except FileNotFoundError:
        return None


def prepare() -> None:
    """Make the folders the settings point to and, when the settings will need it, the kept
    secret key."""
    if not env_str("DATABASE_URL"):
        var_dir().mkdir(parents=True, exist_ok=True)
    static_root().mkdir(parents=True, exist_ok=True)
    if not env_str("DJANGO_SECRET_KEY") and may_keep_secret_key() and kept_secret_key() is None:
        var_dir().mkdir(parents=True, exist_ok=True)
        written = _secret_key_file().with_suffix(".tmp")
        written.write_text(secrets.token_urlsafe(50))
        written.replace(_secret_key_file())  # whole or not at all, should two programs start at once
