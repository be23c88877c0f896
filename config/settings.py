"""Settings, all from the environment (see config/env.py).

With no variable set this is the *embedded default*: a SQLite file under ``var/``, the
local-memory cache and Celery tasks run eagerly in-process. ``DATABASE_URL``, ``REDIS_URL`` and
``CELERY_BROKER_URL`` switch each part to its production counterpart independently.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from csp.constants import NONCE, NONE, SELF
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

from . import local_files
from .env import (
    database_from_url,
    email_from_url,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_str,
    oidc_providers_from_env,
    parse_rate_limits,
    redis_cache,
    replica_databases,
    sqlite_database,
)

BASE_DIR = local_files.BASE_DIR
VAR_DIR = local_files.var_dir()

DEBUG = env_bool("DJANGO_DEBUG", False)
DATABASE_URL = env_str("DATABASE_URL")
REDIS_URL = env_str("REDIS_URL")
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL")
EMBEDDED = local_files.embedded()

SECRET_KEY = env_str("DJANGO_SECRET_KEY") or (
    local_files.kept_secret_key() if local_files.may_keep_secret_key() else None
)
if not SECRET_KEY:
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY must be set "
        + (
            "(or start through manage.py once: it keeps a key in var/ for the embedded default)"
            if local_files.may_keep_secret_key()
            else "outside the embedded default"
        )
    )

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "axes",
    "csp",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "comments",
    "likes",
    "moderation",
    "demo",
    "portability",
    "notifications",
    "webhooks",
    "feeds",
    "accounts",
    # Sign-in with GitHub, Google and OpenID Connect providers (accounts/oidc/): allauth's
    # protocol side only; accounts' adapter makes the local user and ends in the popup.
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.github",
    "allauth.socialaccount.providers.openid_connect",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Content-Security-Policy (CONTENT_SECURITY_POLICY below) on every answer but JSON that has
    # none of its own; before the views, so a template can ask for the request's nonce.
    "config.csp.ContentSecurityPolicyMiddleware",
    "comments.middleware.ApiErrorMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    # Last, as django-axes asks: turns a login refused for too many failures into its page
    # (AXES_LOCKOUT_CALLABLE below).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
AUTH_USER_MODEL = "comments.User"
# django-axes' backend first: it refuses a locked-out username and address before any password is
# checked (AXES_* below); the model backend then checks the password.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

if DATABASE_URL:
    DATABASES = {"default": database_from_url(DATABASE_URL)}
else:
    DATABASES = {"default": sqlite_database(str(VAR_DIR / "comments.sqlite3"))}

# Read replicas (infra/replicas.py): reads of requests that change nothing go to a replica,
# unless the client wrote in the last DATABASE_REPLICA_MAX_LAG seconds and no replica has replayed
# its write yet; writes, transactions, tasks and commands use the primary. None: today's single
# database, and neither the router nor its middleware is installed.
DATABASES.update(replica_databases(env_list("DATABASE_REPLICA_URLS", []), DATABASES["default"]))
DATABASE_REPLICAS = [alias for alias in DATABASES if alias != "default"]
# The likers index carries non-key columns on PostgreSQL (a likers page read from the index
# alone, likes.models); SQLite builds it without them, which Django would warn about at every
# command of the embedded default.
SILENCED_SYSTEM_CHECKS = ["models.W040"] if DATABASES["default"]["ENGINE"].endswith("sqlite3") else []
# A replica further behind than this is not read from; a client's own writes keep it on the
# primary this long at most.
DATABASE_REPLICA_MAX_LAG = env_float("DATABASE_REPLICA_MAX_LAG", 10.0)
# A page the shared cache keeps is built on a replica only once it has replayed everything the
# primary had written when the build began; the build waits this long for it, then reads the
# primary. (The position is the whole server's, so a busy primary is always a little ahead.)
DATABASE_REPLICA_CATCH_UP = env_float("DATABASE_REPLICA_CATCH_UP", 0.05)
# After a replica fails, a process reads the primary alone for this many seconds.
DATABASE_REPLICA_RETRY = env_float("DATABASE_REPLICA_RETRY", 5.0)
if DATABASE_REPLICAS:
    if not REDIS_URL:
        # A client's writes are remembered in the shared cache; a cache of each process's own
        # would forget them whenever the next request reaches another process.
        raise ImproperlyConfigured(
            "DATABASE_REPLICA_URLS needs REDIS_URL (read-your-writes is kept in the shared cache)"
        )
    DATABASE_ROUTERS = ["infra.replicas.ReplicaRouter"]
    MIDDLEWARE.insert(MIDDLEWARE.index("comments.middleware.ApiErrorMiddleware"), "infra.replicas.ReplicaMiddleware")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Seconds the cache's Redis has to accept a connection and to answer a command: about what a
# request waits for one that does not answer (a cluster's client sends no command twice:
# infra.redislink.connect). LIKES_REDIS_TIMEOUT below is the like state's.
REDIS_TIMEOUT = env_float("REDIS_TIMEOUT", 1.0)
if REDIS_URL:
    CACHES = {"default": redis_cache(REDIS_URL, timeout=REDIS_TIMEOUT, prefix=env_str("COMMENTS_CACHE_PREFIX", "cs"))}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Likes (likes/): Redis-first like state, flushed to the database in batches.
# The Redis holding like state and the event streams; the cache's Redis unless named. Without
# one (the embedded default) likes are written straight to the database.
LIKES_REDIS_URL = env_str("LIKES_REDIS_URL", REDIS_URL)
LIKES_FLUSH_INTERVAL = env_float("LIKES_FLUSH_INTERVAL", 1.0)
# Events read and written per database transaction by the flush.
LIKES_FLUSH_BATCH = env_int("LIKES_FLUSH_BATCH", 5000)
# A flush stops taking new batches after this many seconds (the next run goes on).
LIKES_FLUSH_MAX_SECONDS = env_float("LIKES_FLUSH_MAX_SECONDS", 30.0)
# Events read by a flush that died are taken over by the next run after this many seconds.
LIKES_RECLAIM_IDLE = env_float("LIKES_RECLAIM_IDLE", 30.0)
# A comment's like state stays in Redis this long after its last flushed change.
LIKES_STATE_TTL = env_int("LIKES_STATE_TTL", 7 * 24 * 3600)
# After a Redis failure, a process uses the database alone for this many seconds.
LIKES_REDIS_RETRY = env_float("LIKES_REDIS_RETRY", 5.0)
LIKES_REDIS_TIMEOUT = env_float("LIKES_REDIS_TIMEOUT", 0.5)
# Partial like states (fast path; docs/fast-paths.md): the first like of a popular comment
# whose state Redis lacks starts from the comment's count and the user's row instead of
# loading every liker. Off: the state is loaded whole first.
LIKES_PARTIAL_STATES = env_bool("LIKES_PARTIAL_STATES", True)
# Hand-offs together (fast path; docs/fast-paths.md): what a write hands on to the workers through
# the state Redis (second check, notifications and webhooks events, empty like state) goes in one
# round trip (infra.streams.together). Off: one round trip per hand-off.
STREAMS_HANDOFFS_TOGETHER = env_bool("STREAMS_HANDOFFS_TOGETHER", True)

# Celery: eager in-process unless a broker is named.
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
# (memory:// with a host: kombu warns "No hostname was supplied" for a bare memory://.)
CELERY_BROKER_URL = CELERY_BROKER_URL or "memory://localhost/"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_DEFAULT_QUEUE = "default"
# A queue per kind of work, so one backlog never starves another: a flood of second checks or of
# notifications does not hold up the like flush, and an import or a retention job that runs for
# minutes does not hold up either. Every task is routed by its name's app (its prefix); the
# suite checks that every task of every app has a route to a declared queue
# (tests/test_celery_queues.py). A plain `celery -A config worker` consumes every queue; a bigger
# deployment runs workers per queue (-Q likes, -Q moderation, ...: docs/production.md).
CELERY_TASK_QUEUES = [
    Queue(name, routing_key=name) for name in ("default", "likes", "moderation", "notifications", "webhooks", "imports")
]
CELERY_TASK_ROUTES = {
    "comments.*": {"queue": "default"},  # counter reconciliation
    "likes.*": {"queue": "likes"},  # the flush and rebuilds
    "moderation.*": {"queue": "moderation"},
    "notifications.*": {"queue": "notifications"},
    "webhooks.*": {"queue": "webhooks"},  # deliveries: a slow endpoint holds up nothing else
    "portability.*": {"queue": "imports"},  # data in and out: imports, exports, retention
}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The second check of new and edited comments is queued in the Redis of like state (a stream,
# LIKES_REDIS_URL) and run in batches this often; without that Redis, one task per comment.
MODERATION_RECHECK_INTERVAL = env_float("MODERATION_RECHECK_INTERVAL", 1.0)
# Queued checks read by a worker that died are taken over after this many seconds.
MODERATION_RECHECK_RECLAIM = env_float("MODERATION_RECHECK_RECLAIM", 30.0)

# Events for notifications (posts, edits, status changes, reports) are queued on a Redis stream
# (LIKES_REDIS_URL) and handed on in batches this often; without that Redis, one task per event.
NOTIFICATIONS_EVENTS_INTERVAL = env_float("NOTIFICATIONS_EVENTS_INTERVAL", 1.0)
# Events read by a worker that died are taken over after this many seconds.
NOTIFICATIONS_EVENTS_RECLAIM = env_float("NOTIFICATIONS_EVENTS_RECLAIM", 30.0)
# Queued notification emails are sent by a beat task this often, in batches; a sender claims a
# batch for NOTIFICATIONS_EMAIL_CLAIM seconds, after which another takes over what it left.
NOTIFICATIONS_EMAIL_INTERVAL = env_float("NOTIFICATIONS_EMAIL_INTERVAL", 10.0)
NOTIFICATIONS_EMAIL_CLAIM = env_float("NOTIFICATIONS_EMAIL_CLAIM", 300.0)
# A reader sent this many notification emails in the last hour (a digest counts as one) has the
# rest moved to their daily digest, so a flood of replies is not a flood of mail (issue 33,
# F10); counted from the database, across every sender. 0: no limit.
NOTIFICATIONS_EMAIL_HOURLY_LIMIT = env_int("NOTIFICATIONS_EMAIL_HOURLY_LIMIT", 10)

# Webhooks: events queued on a Redis stream like notifications' and turned into deliveries this
# often; deliveries whose retry is due are sent every WEBHOOKS_RETRY_INTERVAL seconds.
WEBHOOKS_EVENTS_INTERVAL = env_float("WEBHOOKS_EVENTS_INTERVAL", 1.0)
WEBHOOKS_EVENTS_RECLAIM = env_float("WEBHOOKS_EVENTS_RECLAIM", 30.0)
WEBHOOKS_RETRY_INTERVAL = env_float("WEBHOOKS_RETRY_INTERVAL", 5.0)
# Seconds a receiver has to answer one request (connect, send, answer).
WEBHOOKS_TIMEOUT = env_float("WEBHOOKS_TIMEOUT", 10.0)
# Deliveries go to public addresses only (infra.outbound) unless this is on: development,
# the tests' receivers on loopback, receivers on the service's own private network.
WEBHOOKS_DELIVER_PRIVATE = env_bool("WEBHOOKS_DELIVER_PRIVATE", False)
# Retries: the first after 15-30 s, each doubling up to 1-2 h, for a day; then failed.
WEBHOOKS_RETRY_BASE = env_float("WEBHOOKS_RETRY_BASE", 30.0)
WEBHOOKS_RETRY_MAX = env_float("WEBHOOKS_RETRY_MAX", 7200.0)
WEBHOOKS_RETRY_FOR = env_float("WEBHOOKS_RETRY_FOR", 24 * 3600.0)

# Feeds (RSS, Atom): how many comments each shows, and how long readers and proxies may keep one.
FEEDS_ITEMS = env_int("FEEDS_ITEMS", 50)
FEEDS_MAX_AGE = env_int("FEEDS_MAX_AGE", 60)


def _beat(task: str, interval: float, *, expires_after: int | None = None) -> dict:
    """A beat entry of ``task`` every ``interval`` seconds; with ``expires_after``, a run that
    has not started within that many intervals (at least 5 s) is superseded by the next ones."""
    options = {} if expires_after is None else {"options": {"expires": max(5.0, expires_after * interval)}}
    return {task: {"task": task, "schedule": interval, **options}}


CELERY_BEAT_SCHEDULE = {
    **_beat("comments.reconcile_recent", float(env_int("COMMENTS_RECONCILE_INTERVAL", 3600))),
    **_beat("moderation.feature_top_comments", float(env_int("MODERATION_FEATURE_INTERVAL", 3600))),
    **_beat("moderation.expire_claims", 60.0),
    **_beat("comments.forget_idempotent_requests", 3600.0),
    # Tasks kept in the database while the broker was down (comments.outbox), queued once it
    # is back.
    **_beat("comments.send_deferred", env_float("COMMENTS_DEFERRED_INTERVAL", 5.0), expires_after=6),
    **_beat("moderation.recheck_queued", MODERATION_RECHECK_INTERVAL, expires_after=5),
    **_beat("portability.scrub_ip_addresses", float(env_int("PORTABILITY_SCRUB_INTERVAL", 24 * 3600))),
    **_beat("notifications.drain_events", NOTIFICATIONS_EVENTS_INTERVAL, expires_after=5),
    **_beat("notifications.like_milestones", env_float("NOTIFICATIONS_LIKE_MILESTONE_INTERVAL", 60.0)),
    **_beat("notifications.send_emails", NOTIFICATIONS_EMAIL_INTERVAL, expires_after=5),
    **_beat("notifications.send_digests", env_float("NOTIFICATIONS_DIGEST_INTERVAL", 24 * 3600.0)),
    **_beat("notifications.review_queues", env_float("NOTIFICATIONS_QUEUE_INTERVAL", 300.0)),
    **_beat("webhooks.drain_events", WEBHOOKS_EVENTS_INTERVAL, expires_after=5),
    **_beat("webhooks.retry_due", WEBHOOKS_RETRY_INTERVAL, expires_after=2),
    **_beat("likes.flush", LIKES_FLUSH_INTERVAL, expires_after=5),
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

# Email (sign-in links, notifications): EMAIL_URL, see config/env.py; the embedded default
# writes messages as files under var/mail/.
globals().update(email_from_url(env_str("EMAIL_URL"), VAR_DIR))
DEFAULT_FROM_EMAIL = env_str("EMAIL_FROM", "Comments <comments@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

LANGUAGE_CODE = "en"
# The widget speaks English and Simplified Chinese (data-lang or Accept-Language); the compiled
# catalogue is committed, so no gettext is needed to run.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = local_files.static_root()
# WhiteNoise serves static files from the app server (the widget loader, the API docs' assets)
# with far-future caching once collected; finders keep a fresh checkout working without
# running collectstatic first.
WHITENOISE_USE_FINDERS = True

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
DATA_UPLOAD_MAX_MEMORY_SIZE = 256 * 1024

# Password guessing (django-axes) on every password login: the console's, the admin's and the
# API's (POST /api/v1/auth/token, which its own throttle limits as well). A username that fails
# AXES_FAILURE_LIMIT times from one client address is refused there, even with the right
# password, for AXES_COOLOFF_SECONDS after the last failure; the same username from another
# address and other usernames from that address still sign in, so a guesser can neither lock an
# account for everyone nor, behind a shared address (an office, a carrier's NAT), its neighbours.
AXES_ENABLED = True
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"  # shared by every process, both modes
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(seconds=env_int("AXES_COOLOFF_SECONDS", 15 * 60))
# The client's address as the rate limits and the address kept with a comment read it
# (COMMENTS_TRUSTED_PROXIES): behind nginx the one nginx saw, never X-Forwarded-For as the client
# wrote it, which would let a guesser take a fresh address per attempt. (axes' own AXES_IPWARE_*
# settings are not used: this callable is the one reading.)
AXES_CLIENT_IP_CALLABLE = "comments.api.views.client_ip"
# The console's page (the admin's look under /admin/, the API's JSON under /api/) with 429.
AXES_LOCKOUT_CALLABLE = "moderation.views.signin_locked_out"
# A good password clears that username's failures at that address (they were the owner's typos).
AXES_RESET_ON_SUCCESS = True
# Attempts while locked are refused unchecked and not counted: the lock ends when its page says,
# and a guesser who keeps trying makes no writes.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# Only failures are kept, each until its cool-off is over (axes deletes them at the next login);
# successful logins are not logged, so axes keeps no record of staff's addresses.
AXES_DISABLE_ACCESS_LOG = True

# Content-Security-Policy of every page that sets none of its own (django-csp; JSON goes
# without, config/csp.py). The widget's page (/embed/: frame-ancestors of its site's origins),
# the sign-in window (/auth/), the unsubscribe page and users' pictures set theirs, which the
# middleware leaves as they are. No inline script or style runs but what a page marks with the
# request's nonce (the API docs' Swagger UI start-up, templates/drf_spectacular/swagger_ui.html);
# the admin and the console need none.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, NONCE],
        "img-src": [SELF, "data:"],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

REST_FRAMEWORK: dict[str, Any] = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "comments.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_RENDERER_CLASSES": ["comments.api.renderers.ApiJSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["comments.api.parsers.SafeJSONParser"],
    "EXCEPTION_HANDLER": "comments.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "COERCE_DECIMAL_TO_STRING": False,
    # The API speaks JSON only: no ``?format=``, so the content negotiation of a request does
    # not parse its query string (a hot page is answered without ever parsing it).
    "URL_FORMAT_OVERRIDE": None,
    # How many proxies of ours stand in front (nginx: 1). The client's address is then the one
    # the outermost of them saw, taken from the right of X-Forwarded-For; with 0 the header is
    # ignored, since any client could write it. One reading for rate limits and for the address
    # kept with a comment (comments.api.views.client_ip).
    "NUM_PROXIES": env_int("COMMENTS_TRUSTED_PROXIES", 0),
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append("rest_framework.renderers.BrowsableAPIRenderer")
    REST_FRAMEWORK["URL_FORMAT_OVERRIDE"] = "format"

SPECTACULAR_SETTINGS = {
    "TITLE": "Comment service API",
    "DESCRIPTION": "REST API v1 of the embeddable comment service.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    # Operations are described by their own docstrings, never by a base view's.
    "GET_LIB_DOC_EXCLUDES": "comments.api.schema.doc_excludes",
    # Enums as components (drf-spectacular's own), then the schema as strict as the validation,
    # the answers of every operation and the links between operations (comments.api.schema).
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "comments.api.schema.postprocess"],
    "ENUM_NAME_OVERRIDES": {
        "EmailModeEnum": "notifications.models.EmailMode.values",
        "NotificationKindEnum": "notifications.models.Kind.values",
        "SubscriptionStateEnum": "notifications.api.SUBSCRIPTION_STATES",
        # moderation's sanction kinds keep the name they had before notifications had kinds too
        "KindEnum": "moderation.models.SanctionKind.values",
    },
}

# Product settings; each may be overridden by an environment variable of the same name.
COMMENTS_MAX_DEPTH = env_int("COMMENTS_MAX_DEPTH", 128)
COMMENTS_MAX_BODY = env_int("COMMENTS_MAX_BODY", 5000)
COMMENTS_EDIT_WINDOW = env_int("COMMENTS_EDIT_WINDOW", 900)
COMMENTS_HOT_LIMIT = env_int("COMMENTS_HOT_LIMIT", 20)
COMMENTS_PINNED_LIMIT = env_int("COMMENTS_PINNED_LIMIT", 5)
COMMENTS_TOKEN_TTL = env_int("COMMENTS_TOKEN_TTL", 30 * 24 * 3600)
# The longest life a host's SSO payload may claim (its exp at most this many seconds ahead): a
# payload signs its reader in as often as it is sent until then (docs/embedding.md).
COMMENTS_SSO_MAX_TTL = env_int("COMMENTS_SSO_MAX_TTL", 2 * 3600)
# How long the answer to a write sent with an Idempotency-Key is kept (comments.idempotency).
COMMENTS_IDEMPOTENCY_TTL = env_int("COMMENTS_IDEMPOTENCY_TTL", 24 * 3600)
COMMENTS_MAX_MENTIONS = env_int("COMMENTS_MAX_MENTIONS", 20)
# On PostgreSQL a post (one new comment, no flag asked) is stored in one data-modifying
# statement: floor, counters and both rows, the subject row locked only while the server runs it
# (comments.services.storage). Off: the general path of a batch, three or four statements in a
# transaction, with the same rows as a result (tests/comments/test_storage.py).
COMMENTS_ONE_STATEMENT_POST = env_bool("COMMENTS_ONE_STATEMENT_POST", True)

# The shared page cache (infra/pagecache.py; a fast path, docs/fast-paths.md). Seconds a cached
# page may live; writes make pages out of date at once, this only bounds what an unread page
# holds. 0 turns it off, and with it the hot copies and the pages built ahead below.
# On by default only with a shared cache (Redis): the embedded default's local-memory cache is
# one per process, and a write in one process could not reach another's pages.
COMMENTS_PAGE_CACHE_TTL = env_int("COMMENTS_PAGE_CACHE_TTL", 300 if REDIS_URL else 0)
# Users' pictures are fetched by the service and served from its origin (comments.avatars); the
# fetch speaks only to public addresses unless this is on (a service whose pictures are on a
# private network; the tests' picture servers on loopback).
AVATARS_FETCH_PRIVATE = env_bool("AVATARS_FETCH_PRIVATE", False)
# Hot copies (fast path; docs/fast-paths.md): a page read this many times a second in one process
# is kept in that process's memory for COMMENTS_HOT_PAGE_SECONDS; other processes' writes reach
# it after that long. COMMENTS_HOT_PAGE_SECONDS=0 turns hot copies off (every read asks the
# shared cache). With the page cache only.
COMMENTS_HOT_PAGE_READS = env_int("COMMENTS_HOT_PAGE_READS", 8)
COMMENTS_HOT_PAGE_SECONDS = env_float("COMMENTS_HOT_PAGE_SECONDS", 1.0)
# Pages built ahead (fast path; docs/fast-paths.md): a reader who follows a cursor gets the pages
# after it built by a background thread of the process (infra.pagecache, "Preloading"); with the
# page cache only. Off: each page is built when it is asked for.
COMMENTS_PAGE_PRELOAD = env_bool("COMMENTS_PAGE_PRELOAD", True)
# After the cache fails to answer, a process reads from the database alone this many seconds.
COMMENTS_CACHE_RETRY = env_float("COMMENTS_CACHE_RETRY", 5.0)

# Moderation (moderation/).
# Seconds a process may go on using its compiled word lists before checking for a change.
MODERATION_WORDS_RECHECK = env_float("MODERATION_WORDS_RECHECK", 1.0)
# More links than this in one comment holds it for review (a spam signal).
MODERATION_MAX_LINKS = env_int("MODERATION_MAX_LINKS", 3)
# The same text from the same user again within this many seconds holds it for review (0: off).
MODERATION_REPEAT_WINDOW = env_int("MODERATION_REPEAT_WINDOW", 300)
# How long a moderator's claim on a review task lasts.
MODERATION_CLAIM_SECONDS = env_int("MODERATION_CLAIM_SECONDS", 600)
# The second check holds for review an author with this many rejected comments in a week, or
# more comments than this in a minute.
MODERATION_REJECTED_LIMIT = env_int("MODERATION_REJECTED_LIMIT", 3)
MODERATION_BURST_LIMIT = env_int("MODERATION_BURST_LIMIT", 10)
# "God comments": featured per active subject, and the likes they need at least.
MODERATION_FEATURE_PER_SUBJECT = env_int("MODERATION_FEATURE_PER_SUBJECT", 3)
MODERATION_FEATURE_MIN_LIKES = env_int("MODERATION_FEATURE_MIN_LIKES", 20)

# Data in and out (portability/). Authors' IP addresses and user agents are kept this many days,
# then scrubbed by the beat task (and never stored for older imported comments); 0 keeps them.
PORTABILITY_IP_RETENTION_DAYS = env_int("PORTABILITY_IP_RETENTION_DAYS", 90)
# What erasing a user does to their comments on a site without its own setting (SitePrivacy):
# "placeholder" keeps each as a deleted placeholder; "remove" deletes those without replies.
PORTABILITY_ERASURE_DEFAULT = env_str("PORTABILITY_ERASURE_DEFAULT", "placeholder")
# Notifications (notifications/).
# Like counts that make a milestone an author may be told of (they opt in), and how old a
# comment may be and still be checked for one.
NOTIFICATIONS_LIKE_MILESTONES = [
    int(n) for n in env_list("NOTIFICATIONS_LIKE_MILESTONES", ["10", "50", "100", "500", "1000", "5000", "10000"])
]
NOTIFICATIONS_LIKE_MILESTONE_DAYS = env_int("NOTIFICATIONS_LIKE_MILESTONE_DAYS", 30)
# The service's public address (scheme, host and port, no path): every link in an email is made
# of it (sign-in links, unsubscribe, the console), never of a request's Host header, which the
# client writes (issue 33, F12). The default is the address `manage.py rundemo` serves.
COMMENTS_PUBLIC_URL = env_str("COMMENTS_PUBLIC_URL", "http://127.0.0.1:8000").rstrip("/")
# The address notifications' emails link to (the one-click unsubscribe among them), when it is
# not COMMENTS_PUBLIC_URL.
NOTIFICATIONS_BASE_URL = env_str("NOTIFICATIONS_BASE_URL", COMMENTS_PUBLIC_URL).rstrip("/")
# An address that unsubscribes by mail too (List-Unsubscribe's mailto:); none by default.
NOTIFICATIONS_UNSUBSCRIBE_MAILTO = env_str("NOTIFICATIONS_UNSUBSCRIBE_MAILTO", "")
# A site's moderators are emailed when its open review queue holds at least this many comments,
# at most once per NOTIFICATIONS_QUEUE_PERIOD seconds.
NOTIFICATIONS_QUEUE_THRESHOLD = env_int("NOTIFICATIONS_QUEUE_THRESHOLD", 20)
NOTIFICATIONS_QUEUE_PERIOD = env_int("NOTIFICATIONS_QUEUE_PERIOD", 24 * 3600)
# A held comment is emailed to its site's moderators, with approve and reject links: one email
# per comment while the site holds fewer than this many a day, in their daily digest above it
# (a site's own choice, SiteModeratorEmail, overrides both; docs/operations.md).
NOTIFICATIONS_HELD_PER_DAY = env_int("NOTIFICATIONS_HELD_PER_DAY", 20)
# Days an approve or reject link of such an email works.
NOTIFICATIONS_DECISION_LINK_DAYS = env_int("NOTIFICATIONS_DECISION_LINK_DAYS", 7)

# Sign-in (accounts/, issue 14). The providers a site may allow, by key (config/env.py,
# oidc_providers_from_env: GitHub, Google, and OpenID Connect providers by discovery URL).
ACCOUNTS_OIDC_PROVIDERS: dict = oidc_providers_from_env()
# Seconds a sign-in link sent by email stays good (it is good once).
ACCOUNTS_EMAIL_LINK_TTL = env_int("ACCOUNTS_EMAIL_LINK_TTL", 900)
# A guest's comment form (its signed token) is refused when sent sooner than this many seconds
# after the widget showed it (a person reads and types; a script posts at once), or later than
# ACCOUNTS_GUEST_FORM_MAX_AGE.
ACCOUNTS_GUEST_FORM_MIN_SECONDS = env_int("ACCOUNTS_GUEST_FORM_MIN_SECONDS", 3)
ACCOUNTS_GUEST_FORM_MAX_AGE = env_int("ACCOUNTS_GUEST_FORM_MAX_AGE", 2 * 3600)

# Per-user rate limits; RATE_LIMITS=off turns them off (load tests).
# email_link counts sign-in links sent to one address, email_link_client those asked for by one
# client (its address). Guests' comments count per guest (the guest's browser, else its
# address) in guest_post and per address in guest_post_client: tighter than post.
RATE_LIMITS = parse_rate_limits(
    env_str(
        "RATE_LIMITS",
        "post=10/min,like=120/min,report=20/h,login=10/min,email_link=5/h,email_link_client=20/h,"
        "guest_post=3/min,guest_post_client=20/h",
    )
)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
}
CSRF_FAILURE_VIEW = "comments.middleware.csrf_failure"

# allauth runs the provider's side of a sign-in (state, PKCE, the code's exchange, the ID token's
# checks); accounts.oidc.adapter takes over from there: it reads the providers from
# ACCOUNTS_OIDC_PROVIDERS, makes the local user and never logs a Django session in.
SOCIALACCOUNT_ADAPTER = "accounts.oidc.adapter.SignInAdapter"
SOCIALACCOUNT_QUERY_EMAIL = True  # GitHub's addresses, with whether each is verified
SOCIALACCOUNT_STORE_TOKENS = False
