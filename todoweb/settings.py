"""todoweb settings: one env-driven module that runs with no environment at all.

With no variables set it uses SQLite (WAL) beside the checkout and the in-memory
channel layer; DATABASE_URL and REDIS_URL switch to PostgreSQL and Redis.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF

from todoweb import redis_connections

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


# The repository's key is for development only: the ASGI application refuses to
# serve with it unless DEBUG is on (asgi.py), and `check --deploy` flags it.
DEVELOPMENT_SECRET_KEY = "django-insecure-todoweb-development-key-never-use-in-production"
SECRET_KEY = os.environ.get("SECRET_KEY") or DEVELOPMENT_SECRET_KEY
DEBUG = env_bool("DEBUG")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")
# Behind a proxy: the addresses whose X-Forwarded-For and X-Forwarded-Proto are taken
# as the client's address and scheme (uvicorn's variable and middleware; "*" trusts
# any). None by default: a client talking to the server directly, even from this
# machine, would otherwise choose the address its failed logins are counted against.
# Django reads the outcome (REMOTE_ADDR, the request's scheme), never the headers.
FORWARDED_ALLOW_IPS = env_list("FORWARDED_ALLOW_IPS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "ninja",
    "csp",
    "axes",
    "django_tasks",
    "django_tasks_db",
    "todoweb",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as axes asks: turns a locked-out login into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "todoweb.urls"
ASGI_APPLICATION = "todoweb.asgi.application"
WSGI_APPLICATION = None

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

# --- Database -------------------------------------------------------------

DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        # Persistent connections leak under ASGI (one thread per request); the
        # PostgreSQL pool below replaces them.
        conn_max_age=0,
    )
}
_db = DATABASES["default"]
if _db["ENGINE"] == "django.db.backends.sqlite3":
    _db["OPTIONS"] = {
        # IMMEDIATE takes the write lock when the transaction starts, so two
        # writers queue on the busy timeout instead of deadlocking on upgrade.
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # Connections stay open: closing the last one checkpoints the WAL into the
    # database file (an fsync), which a request per connection would pay every time.
    # (PostgreSQL keeps CONN_MAX_AGE=0 and uses the pool below instead.)
    _db["CONN_MAX_AGE"] = None
    # A file, not shared-cache memory: tests run real concurrent writers and a
    # live server in other threads. One per process, so parallel runs never collide,
    # in the temp folder, where SQLite's -wal/-shm leftovers do not litter the checkout.
    _db["TEST"] = {"NAME": str(Path(tempfile.gettempdir()) / f"todoweb-test-{os.getpid()}.sqlite3")}
elif _db["ENGINE"] == "django.db.backends.postgresql":
    # One test database per process: two test runs on one server never collide.
    _db["TEST"] = {"NAME": f"test_{_db['NAME']}_{os.getpid()}"}
    # No check as a connection leaves the pool: it costs a round trip per request
    # (writes/s fell from 160 to 112). A connection PostgreSQL dropped (a restart,
    # a failover) fails one request with 503 + Retry-After, and is then discarded.
    _db.setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": env_int("TODOWEB_DB_POOL_SIZE", 8),
        "timeout": 30,
    }
    # Parameters travel apart from the SQL (a write carries 10 KB of JSON that would
    # otherwise be quoted into it), and a statement run 5 times in a connection is
    # prepared: PostgreSQL stops planning it on every call. Set TODOWEB_DB_PREPARE=0
    # behind a pooler that cannot keep prepared statements (PgBouncer before 1.21 in
    # transaction mode).
    _db["OPTIONS"]["server_side_binding"] = True
    _db["OPTIONS"]["prepare_threshold"] = 5 if env_bool("TODOWEB_DB_PREPARE", True) else None
# Threads the tool endpoint writes from (store/database.py): on PostgreSQL their
# round trips overlap; SQLite takes one writer at a time. Each holds a pooled
# connection while it writes, so keep it below TODOWEB_DB_POOL_SIZE.
TODOWEB_DB_THREADS = env_int("TODOWEB_DB_THREADS", 2 if _db["ENGINE"] == "django.db.backends.postgresql" else 1)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The fast paths that lean on a library's private parts (todoweb.fences), each taken
# only on the versions it was tested with; 0 takes the libraries' public paths alone.
TODOWEB_FAST_PATHS = env_bool("TODOWEB_FAST_PATHS", True)

# --- Channels and cache ---------------------------------------------------


def default_channel_prefix(database: dict) -> str:
    """A prefix unique to the database: two deployments sharing one Redis server never
    see each other's events (Redis pub/sub ignores the database number)."""
    where = "|".join(str(database.get(part) or "") for part in ("ENGINE", "HOST", "PORT", "NAME"))
    return "todoweb." + hashlib.sha256(where.encode()).hexdigest()[:12]


TODOWEB_CHANNEL_PREFIX = os.environ.get("TODOWEB_CHANNEL_PREFIX") or default_channel_prefix(_db)

REDIS_URL = os.environ.get("REDIS_URL", "")
# Seconds to wait for Redis to accept a connection: a Redis that is down or
# unreachable must cost a request little (writes need only the database).
REDIS_CONNECT_TIMEOUT = 1
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            # The pub/sub layer never drops a message; every live event is a full
            # snapshot, so a slow watcher skips to the newest one (todoweb.live).
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        "socket_connect_timeout": REDIS_CONNECT_TIMEOUT,
                        # Counts the connections made, so a cut subscription is seen.
                        "redis_connect_func": redis_connections.connected,
                    }
                ],
                "prefix": TODOWEB_CHANNEL_PREFIX,
            },
        }
    }
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": TODOWEB_CHANNEL_PREFIX,
            "OPTIONS": {"socket_connect_timeout": REDIS_CONNECT_TIMEOUT, "socket_timeout": REDIS_CONNECT_TIMEOUT},
        }
    }
else:
    # One process: the in-memory layer, with a group send a write can afford (todoweb.live.layer).
    CHANNEL_LAYERS = {"default": {"BACKEND": "todoweb.live.layer.ProcessLayer"}}
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# The per-token rate limit (django-ratelimit): a cache that is down lets requests
# through rather than failing them (todoweb.web.auth logs it).
RATELIMIT_FAIL_OPEN = True

# --- Auth, i18n, static ---------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# Login throttling (django-axes, todoweb.web.board.login_throttle): AXES_FAILURE_LIMIT wrong
# passwords within AXES_COOLOFF_TIME lock the account out, and (separately) the
# address they came from, for AXES_COOLOFF_TIME after the last of them. Counted in
# the database, so every process counts the same failures. Failures while locked out
# are not counted: the lock ends when the page says, however often someone retries.
AUTHENTICATION_BACKENDS = [
    "todoweb.web.board.login_throttle.LoginThrottle",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
AXES_FAILURE_LIMIT = env_int("TODOWEB_LOGIN_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("TODOWEB_LOGIN_LOCKOUT_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_CALLABLE = "todoweb.web.board.login_throttle.locked_out"
# The address the server gave the request (from a configured proxy's X-Forwarded-For,
# see FORWARDED_ALLOW_IPS), never one axes would read from the headers itself.
AXES_CLIENT_IP_CALLABLE = "todoweb.web.board.login_throttle.client_address"
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"
# Serve straight from the source folders when collectstatic has not been run,
# so the embedded default needs no build step.
WHITENOISE_USE_FINDERS = True
# STATIC_ROOT exists only after `collectstatic` (production); until then the
# finders serve everything and WhiteNoise's warning about the folder is noise.
warnings.filterwarnings("ignore", message="No directory at")
# WhiteNoise hands Django file iterators that are synchronous; under ASGI Django
# reads them through a thread, which is fine for static files.
warnings.filterwarnings("ignore", message="StreamingHttpResponse must consume synchronous iterators")
WHITENOISE_AUTOREFRESH = DEBUG

# --- Security (production behind TLS: TODOWEB_HTTPS=1) --------------------

SECURE_CONTENT_TYPE_NOSNIFF = True
# The board loads nothing from elsewhere and runs no inline script or style: pages may
# fetch and open websockets to their own origin only, and be framed by no one
# (django-csp). Agent text is escaped anyway; this stops what escaping might miss.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [NONE],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "manifest-src": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
        "base-uri": [NONE],
        "object-src": [NONE],
    }
}
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
if env_bool("TODOWEB_HTTPS"):
    # No SECURE_PROXY_SSL_HEADER: Django would take X-Forwarded-Proto from any client.
    # The scheme is the one uvicorn's proxy-header middleware sets from FORWARDED_ALLOW_IPS.
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("TODOWEB_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True

# --- todoweb limits -------------------------------------------------------

TODOWEB_MAX_BODY_BYTES = env_int("TODOWEB_MAX_BODY_BYTES", 256 * 1024)
TODOWEB_IDLE_AFTER = env_int("TODOWEB_IDLE_AFTER", 600)  # seconds
TODOWEB_RATE_LIMIT = env_int("TODOWEB_RATE_LIMIT", 1200)  # requests per token per minute
TODOWEB_RETENTION_DAYS = env_int("TODOWEB_RETENTION_DAYS", 90)
TODOWEB_MAX_ITEMS_CAP = 500
# The OTLP receiver's exports batch many records (a whole session's at an agent's exit).
TODOWEB_OTLP_MAX_BODY_BYTES = env_int("TODOWEB_OTLP_MAX_BODY_BYTES", 8 * 1024 * 1024)

# --- Webhooks (todoweb.webhooks, docs/webhooks.md) -------------------------

# The durable queue deliveries wait in: a table of the database (django-tasks-db).
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default", "webhooks"]}}
# Every server process delivers from a thread of its own; 0 where `manage.py
# webhook_worker` runs apart.
TODOWEB_WEBHOOK_WORKER = env_bool("TODOWEB_WEBHOOK_WORKER", True)
# Attempts a process makes at once (threads of its worker): at most one per endpoint,
# at most half of them per project.
TODOWEB_WEBHOOK_CONCURRENCY = env_int("TODOWEB_WEBHOOK_CONCURRENCY", 8)
# Private, loopback and link-local addresses are refused unless this is on.
TODOWEB_WEBHOOKS_ALLOW_PRIVATE = env_bool("TODOWEB_WEBHOOKS_ALLOW_PRIVATE")
# The board's address for the links in messages (default: the address the endpoint was made at).
TODOWEB_PUBLIC_URL = os.environ.get("TODOWEB_PUBLIC_URL", "").rstrip("/")
# Retries: the first after TODOWEB_WEBHOOK_RETRY_BASE seconds, then twice as long each
# time (at most 6 hours apart), for TODOWEB_WEBHOOK_RETRY_FOR seconds after the event.
TODOWEB_WEBHOOK_RETRY_BASE = float(os.environ.get("TODOWEB_WEBHOOK_RETRY_BASE", 30))
TODOWEB_WEBHOOK_RETRY_FOR = env_int("TODOWEB_WEBHOOK_RETRY_FOR", 24 * 3600)
# An endpoint whose every delivery failed for this long is disabled.
TODOWEB_WEBHOOK_DISABLE_AFTER = env_int("TODOWEB_WEBHOOK_DISABLE_AFTER", 3 * 24 * 3600)

# Django refuses larger bodies itself; the API turns that into a 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = TODOWEB_MAX_BODY_BYTES

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"without_traceback": {"()": "todoweb.logs.WithoutTraceback"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler"},
        "console_one_line": {"class": "logging.StreamHandler", "filters": ["without_traceback"]},
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
    "loggers": {
        # Every 4xx is an answer the caller gets in full; the log keeps server errors.
        "django.request": {"level": "ERROR"},
        # A request for a host outside ALLOWED_HOSTS (a scanner, a misconfigured
        # health check) is answered 400 and noted in one line.
        "django.security.DisallowedHost": {"handlers": ["console_one_line"], "propagate": False},
    },
}
# Share tokens, API tokens and session cookies never reach a log: these loggers
# print request lines (query strings included) and get a redacting filter
# (todoweb.logs), whoever configures their handlers.
TODOWEB_REDACTED_LOGGERS = [
    "uvicorn.access",
    "uvicorn.error",
    "django.request",
    "django.server",
    "django.channels.server",
]
