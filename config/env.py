"""The one reader of environment variables: every setting that may change per deployment
comes through here, so the embedded default needs no variable at all."""

from __future__ import annotations

import os
import re
from typing import overload
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _binding_options(options: dict) -> dict:
    server_side = options.pop("server_side_binding", "1").lower() in _TRUE
    threshold = options.pop("prepare_threshold", "5" if server_side else "off").strip().lower()
    return {
        "server_side_binding": server_side,
        "prepare_threshold": None if threshold in _FALSE | {"none"} else int(threshold),
    }


@overload
def env_str(name: str, default: str) -> str: ...
@overload
def env_str(name: str, default: None = None) -> str | None: ...
def env_str(name: str, default: str | None = None) -> str | None:
    value = os.environ.get(name)
    return default if value is None else value


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean, got {value!r}")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from None


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def database_from_url(url: str) -> dict:
    """Django DATABASES entry for a ``postgres://`` or ``sqlite:///`` URL.

    Only the two engines the product supports; anything else is a configuration error rather
    than a silent fallback.
    """
    parts = urlsplit(url)
    options = dict(parse_qsl(parts.query))
    if parts.scheme in {"postgres", "postgresql", "pgsql"}:
        config = {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parts.path.lstrip("/")),
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": unquote(parts.hostname or ""),
            "PORT": str(parts.port or ""),
            "CONN_MAX_AGE": int(options.pop("conn_max_age", 60)),
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": {
                # Parameters bound on the server, and a statement prepared after its
                # ``prepare_threshold``-th run on a connection (Django turns preparing off unless
                # asked), so PostgreSQL stops parsing and planning it again: the hot statements'
                # text depends only on their shape (comments/rowsql.py), and planning them cost
                # more than running them. Turn both off (?server_side_binding=0) behind a
                # transaction-pooling PgBouncer without prepared-statement support, or only the
                # preparing (?prepare_threshold=off).
                **_binding_options(options),
                **options,
            },
        }
        return config
    if parts.scheme == "sqlite":
        # sqlite:///relative.db and sqlite:////absolute/path.db, as dj-database-url reads them.
        path = unquote(parts.path[1:] if parts.path.startswith("//") else parts.path.lstrip("/"))
        if parts.path.startswith("//"):
            path = "/" + path.lstrip("/")
        return sqlite_database(path or ":memory:")
    raise ImproperlyConfigured(f"DATABASE_URL scheme {parts.scheme!r} is not supported")


def redis_cache(url: str, *, timeout: float, prefix: str) -> dict:
    """Django CACHES entry for the shared cache on the Redis ``url`` names, a single server or
    (``redis+cluster://``) a Redis Cluster. ``timeout`` bounds each connection attempt and each
    reply, in seconds (``REDIS_TIMEOUT``)."""
    return {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": url,
        "KEY_PREFIX": prefix,
        "OPTIONS": {
            "CLIENT_CLASS": "django_redis.client.DefaultClient",
            # Reaches a Redis Cluster too, named by a redis+cluster:// URL.
            "CONNECTION_FACTORY": "infra.rediscache.ClusterAwareConnectionFactory",
            "SOCKET_CONNECT_TIMEOUT": timeout,
            "SOCKET_TIMEOUT": timeout,
        },
    }


def replica_databases(urls: list[str], primary: dict) -> dict:
    """Django DATABASES entries (``replica1``, ``replica2``, ...) for ``DATABASE_REPLICA_URLS``:
    PostgreSQL only, beside a PostgreSQL primary. A replica's connection attempt gives up after
    2 s unless its URL sets ``connect_timeout`` (a replica that does not answer is then left
    alone for a while: infra/replicas.py). Tests never create a database on a replica: its
    test database is the primary's, which it replays (``TEST: MIRROR``)."""
    if not urls:
        return {}
    if primary["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_REPLICA_URLS needs a PostgreSQL DATABASE_URL")
    replicas = {}
    for number, url in enumerate(urls, start=1):
        if urlsplit(url).scheme not in {"postgres", "postgresql", "pgsql"}:
            raise ImproperlyConfigured(f"DATABASE_REPLICA_URLS entry {url!r} is not a postgres:// URL")
        config = database_from_url(url)
        config["OPTIONS"].setdefault("connect_timeout", 2)
        config["TEST"] = {"MIRROR": "default"}
        replicas[f"replica{number}"] = config
    return replicas


def sqlite_database(path: str) -> dict:
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        "OPTIONS": {
            # IMMEDIATE takes the write lock at BEGIN, so concurrent writers queue on the
            # timeout instead of failing with "database is locked" when they upgrade.
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        "TEST": {"NAME": path + ".test" if path != ":memory:" else ""},
    }


def email_from_url(url: str | None, var_dir) -> dict:
    """Django's EMAIL_* settings for an ``EMAIL_URL``.

    ``smtp://user:password@host:587`` (STARTTLS with ``?tls=1``), ``smtps://…:465`` (TLS from the
    first byte), ``console:`` (messages printed by the process that sends them). Without a URL
    the messages are written as files under ``var/mail/`` so that a newcomer on the embedded
    default can open the sign-in links and notifications the service sends.
    """
    if not url:
        return {
            "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
            # A path only: Django's file backend creates the folder when it first sends.
            "EMAIL_FILE_PATH": str(var_dir / "mail"),
        }
    parts = urlsplit(url)
    options = dict(parse_qsl(parts.query))
    if parts.scheme == "console":
        return {"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"}
    if parts.scheme not in {"smtp", "smtps"}:
        raise ImproperlyConfigured(f"EMAIL_URL scheme {parts.scheme!r} is not supported (smtp, smtps, console)")
    if not parts.hostname:
        raise ImproperlyConfigured("EMAIL_URL names no host")
    use_ssl = parts.scheme == "smtps"
    return {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": parts.hostname,
        "EMAIL_PORT": parts.port or (465 if use_ssl else 25),
        "EMAIL_HOST_USER": unquote(parts.username or ""),
        "EMAIL_HOST_PASSWORD": unquote(parts.password or ""),
        "EMAIL_USE_SSL": use_ssl,
        "EMAIL_USE_TLS": not use_ssl and options.get("tls", "0").lower() in _TRUE,
        "EMAIL_TIMEOUT": float(options.get("timeout", 10)),
    }


_PERIODS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
}


def parse_rate_limits(text: str) -> dict[str, tuple[int, int]]:
    """``"post=10/min,like=120/min"`` -> ``{"post": (10, 60), "like": (120, 60)}``;
    ``"off"`` -> ``{}``."""
    text = text.strip()
    if text.lower() in {"off", "none", ""}:
        return {}
    limits = {}
    for item in text.split(","):
        try:
            scope, rate = item.split("=")
            count, period = rate.split("/")
            limits[scope.strip()] = (int(count), _PERIODS[period.strip().lower()])
        except (ValueError, KeyError):
            raise ImproperlyConfigured(f"RATE_LIMITS entry {item!r} is not like 'post=10/min'") from None
    return limits


GOOGLE_DISCOVERY_URL = "https://accounts.google.com/.well-known/openid-configuration"
# Keys a generic provider may not take: the named providers, and the other sign-in methods
# (create_site --signin names them side by side).
_RESERVED_KEYS = {"github", "google", "sso", "email", "guests"}


def oidc_providers_from_env() -> dict[str, dict]:
    """The sign-in providers a site may offer (``ACCOUNTS_OIDC_PROVIDERS``), by key: GitHub with
    ``ACCOUNTS_GITHUB_CLIENT_ID`` and ``ACCOUNTS_GITHUB_SECRET``; Google with
    ``ACCOUNTS_GOOGLE_CLIENT_ID`` and ``ACCOUNTS_GOOGLE_SECRET``; and each key listed in
    ``ACCOUNTS_OIDC`` (``corp,keycloak``) as an OpenID Connect provider found by discovery:
    ``ACCOUNTS_OIDC_<KEY>_DISCOVERY_URL`` (the issuer, or its
    ``/.well-known/openid-configuration``), ``_CLIENT_ID``, ``_SECRET`` and ``_NAME`` (shown on
    its button; the key by default), ``<KEY>`` upper-cased with ``-`` as ``_``. Each is
    ``{"kind": "github" | "oidc", "name", "client_id", "secret"}`` plus ``discovery_url`` for
    ``oidc``."""
    providers: dict[str, dict] = {}
    if env_str("ACCOUNTS_GITHUB_CLIENT_ID"):
        providers["github"] = {
            "kind": "github",
            "name": "GitHub",
            "client_id": env_str("ACCOUNTS_GITHUB_CLIENT_ID"),
            "secret": env_str("ACCOUNTS_GITHUB_SECRET", ""),
        }
    # Google is an OpenID Connect provider like any other, found by its discovery document.
    if env_str("ACCOUNTS_GOOGLE_CLIENT_ID"):
        providers["google"] = {
            "kind": "oidc",
            "name": "Google",
            "client_id": env_str("ACCOUNTS_GOOGLE_CLIENT_ID"),
            "secret": env_str("ACCOUNTS_GOOGLE_SECRET", ""),
            "discovery_url": GOOGLE_DISCOVERY_URL,
        }
    for key in env_list("ACCOUNTS_OIDC", []):
        prefix = f"ACCOUNTS_OIDC_{key.upper().replace('-', '_')}_"
        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", key) or key in _RESERVED_KEYS:
            raise ImproperlyConfigured(
                f"ACCOUNTS_OIDC: {key!r} is not a lower-case key of letters, digits, - and _ (nor github, google, sso, email or guests)"
            )
        discovery_url, client_id = env_str(prefix + "DISCOVERY_URL", ""), env_str(prefix + "CLIENT_ID", "")
        if not discovery_url.startswith(("https://", "http://")) or not client_id:
            raise ImproperlyConfigured(
                f"ACCOUNTS_OIDC names {key!r}: set {prefix}DISCOVERY_URL (an http(s) URL) and {prefix}CLIENT_ID"
            )
        providers[key] = {
            "kind": "oidc",
            "name": env_str(prefix + "NAME", "") or key,
            "client_id": client_id,
            "secret": env_str(prefix + "SECRET", ""),
            "discovery_url": discovery_url,
        }
    return providers
