"""One env-driven settings module. With nothing set: SQLite, local-memory cache, Celery in-process."""

from __future__ import annotations

import contextlib
import sys
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

from . import __version__
from .converters import MAX_ROW_ID
from .env import (
    env_bool,
    env_float,
    env_int,
    env_list,
    env_networks,
    env_origins,
    env_proxy_ssl_header,
    env_str,
    env_url,
)
from .secret_key import fallback_secret_key

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("MEMORYHUB_VAR_DIR") or BASE_DIR / "var")

DEBUG = env_bool("DEBUG", False)
# One key shared by every process; without it only DEBUG, the tests and one-off manage.py commands start
# (memoryhub/secret_key.py). `dev.py serve` keeps one in var/secret-key and passes it on.
SECRET_KEY = env_str("SECRET_KEY") or fallback_secret_key(debug=DEBUG)
LOCAL_HOSTS = ["127.0.0.1", "localhost", "testserver", "[::1]"]
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", LOCAL_HOSTS)

# --- HTTPS and headers (docs/production.md#https-headers-and-metrics). Once ALLOWED_HOSTS names a host other
# than this machine, the secure defaults apply; every one can be set explicitly.
PUBLIC = not set(ALLOWED_HOSTS) <= set(LOCAL_HOSTS)
SECURE_PROXY_SSL_HEADER = env_proxy_ssl_header("SECURE_PROXY_SSL_HEADER")  # the TLS load balancer's header
CSRF_TRUSTED_ORIGINS = env_origins("CSRF_TRUSTED_ORIGINS")  # the admin's public origin, behind a proxy
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000 if PUBLIC else 0, minimum=0)  # HTTPS answers only
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]  # load balancers and Prometheus probe by HTTP
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", PUBLIC)
# The admin shows a new API key or webhook secret once, as a message: kept in the server-side session, never in
# the (signed, not encrypted) cookie Django's default storage would put it in (an outside check decoded one).
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", PUBLIC)
CSRF_COOKIE_HTTPONLY = True  # the admin's forms carry the token; no script needs the cookie
# The admin and console's Content-Security-Policy (memoryhub/security.py); "" sends none. Their pages run only
# same-origin scripts; styles may be inline (Django's own changelist has a <style> block).
CONTENT_SECURITY_POLICY = env_str(
    "CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
)
# /metrics: open to anyone presenting METRICS_TOKEN as a bearer token or connecting from METRICS_ALLOWED_NETWORKS
# (the TCP peer, never a forwarded header); with neither set, open, or loopback only once PUBLIC.
METRICS_TOKEN = env_str("METRICS_TOKEN")
METRICS_ALLOWED_NETWORKS = env_networks(
    "METRICS_ALLOWED_NETWORKS", ["127.0.0.0/8", "::1"] if PUBLIC or METRICS_TOKEN else ["0.0.0.0/0", "::/0"]
)

INSTALLED_APPS = [
    "memoryhub.devserver",  # first: its runserver passes the raw path (memoryhub/api/raw_path.py)
    "django.contrib.admin",
    "django.contrib.auth",
    "axes",  # admin login throttling (AXES_* below)
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI assets served locally: the docs page works offline
    "django_filters",
    "memoryhub.outbox",
    "memories",
    "memories.longterm",
    "memories.hinos",
    "memories.compact",
    "memories.state",
    "memories.story",
    "memories.history",
    "memories.lifecycle",
    "memories.console",
    "memories.mcp",
    "memories.webhooks",
    "diaries",
    "tables",
    "lorebooks",
]

MIDDLEWARE = [
    "memoryhub.api.metrics.MetricsMiddleware",
    "memoryhub.api.bodies.LengthRequiredMiddleware",  # a chunked body is 411, not read as empty
    "memoryhub.api.query_text.StorableQueryMiddleware",  # a NUL in a query string is 400 (docs/contract.md)
    "memoryhub.api.raw_path.EncodedSlashMiddleware",  # %2F in a path is 400, never routed as a "/"
    "django.middleware.security.SecurityMiddleware",
    "memoryhub.security.ContentSecurityPolicyMiddleware",  # /admin/ only (CONTENT_SECURITY_POLICY)
    "whitenoise.middleware.WhiteNoiseMiddleware",  # static files (admin, API docs) with DEBUG off
    "memoryhub.db_routing.ReplicaReadsMiddleware",  # GET requests may read the replica (DATABASE_REPLICA_URL)
    "django.contrib.sessions.middleware.SessionMiddleware",
    "memories.console.middleware.ConsoleLocaleMiddleware",  # LocaleMiddleware for /admin/ (English, 简体中文)
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # answers a locked-out login with 429 (AXES_LOCKOUT_TEMPLATE)
]

ROOT_URLCONF = "memoryhub.urls"
WSGI_APPLICATION = "memoryhub.wsgi.application"
APPEND_SLASH = False

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

# --- Database: PostgreSQL when DATABASE_URL is set, else an embedded SQLite file.
DATABASE_URL = env_url("DATABASE_URL", ("postgres", "postgresql", "sqlite"))
if DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)}
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "memoryhub.sqlite3"),
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL;"},
        }
    }
IS_POSTGRES = DATABASES["default"]["ENGINE"].endswith("postgresql")
if IS_POSTGRES:  # a database host that does not answer must not hold a request past gunicorn's timeout
    CONNECT_TIMEOUT = env_int("DATABASE_CONNECT_TIMEOUT", 5, minimum=1)
    DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = CONNECT_TIMEOUT
# How a process holds its PostgreSQL connection (docs/production.md; both measured in docs/performance.md):
# "persistent" keeps one per process, health-checked before a request reuses it; "pool" borrows one per
# request from psycopg's pool (Django's OPTIONS["pool"], health-checked too), waiting at most CONNECT_TIMEOUT.
DATABASE_CONNECTIONS = env_str("DATABASE_CONNECTIONS", "persistent")
if DATABASE_CONNECTIONS not in ("persistent", "pool"):
    raise ImproperlyConfigured(f"DATABASE_CONNECTIONS must be persistent or pool, got {DATABASE_CONNECTIONS!r}")
if IS_POSTGRES and DATABASE_CONNECTIONS == "pool":
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool replaces persistent connections (Django requires 0)
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": 1,  # a sync worker serves one request at a time: one connection is all it can use
        "max_size": env_int("DATABASE_POOL_MAX_SIZE", 2, minimum=1),
        "timeout": CONNECT_TIMEOUT,  # a request waiting for a connection gives up like a failed connect
    }
# A read replica for GET requests' selectors (memoryhub/db_routing.py, docs/scaling.md); the tests mirror it.
DATABASE_REPLICA_URL = env_url("DATABASE_REPLICA_URL", ("postgres", "postgresql"))
if DATABASE_REPLICA_URL:
    DATABASES["replica"] = {
        **dj_database_url.parse(DATABASE_REPLICA_URL, conn_max_age=60, conn_health_checks=True),
        "TEST": {"MIRROR": "default"},
    }
DATABASE_ROUTERS = ["memoryhub.db_routing.ReplicaRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Fault injection (memoryhub/faults.py): lets the test suite SIGKILL a server right after a commit and
# inject a concurrent write into a worker. Refused unless DEBUG is on or the process runs under the tests:
# pytest itself, or a server or worker the suite started on its test database (Django and pytest-django
# name every test database "test_…"; no deployment points at one).
FAULT_INJECTION = env_bool("MEMORYHUB_FAULT_INJECTION", False)
FAULT_CRASH_AFTER_COMMIT = env_list("MEMORYHUB_CRASH_AFTER_COMMIT", [])  # operation ids
if FAULT_CRASH_AFTER_COMMIT and not FAULT_INJECTION:
    raise ImproperlyConfigured("MEMORYHUB_CRASH_AFTER_COMMIT needs MEMORYHUB_FAULT_INJECTION=1")
if FAULT_INJECTION and not (
    DEBUG or "pytest" in sys.modules or Path(str(DATABASES["default"]["NAME"])).name.startswith("test_")
):
    raise ImproperlyConfigured("MEMORYHUB_FAULT_INJECTION is for the test suite: it needs DEBUG=1 or a test database")

# --- Cache: Redis holds only the working set. Exceptions are never ignored: an outage must be a 503.
REDIS_URL = env_url("REDIS_URL", ("redis", "rediss", "unix"))
WORKING_SET_TTL_SECONDS = env_int("WORKING_SET_TTL_SECONDS", 300, minimum=1)
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "memoryhub",
            "OPTIONS": {
                "CLIENT_CLASS": "django_redis.client.DefaultClient",
                "SOCKET_CONNECT_TIMEOUT": 1,
                "SOCKET_TIMEOUT": 1,
            },
        }
    }
    DJANGO_REDIS_IGNORE_EXCEPTIONS = False
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "memoryhub"}}

# --- Celery: a broker when configured (CELERY_BROKER_URL, else REDIS_URL); otherwise tasks run in-process.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or REDIS_URL
CELERY_TASK_ALWAYS_EAGER = CELERY_BROKER_URL is None
if CELERY_TASK_ALWAYS_EAGER:
    # In-process tasks publish nothing. kombu's in-memory transport keeps Celery from building an AMQP
    # connection to a default localhost (which logs "No hostname was supplied" on the first task).
    CELERY_BROKER_URL = "memory://localhost//"
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_ACKS_LATE = True  # a task lost with its worker is redelivered; tasks are idempotent
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
# --- Outbox (memoryhub/outbox, docs/outbox.md): background work is a row committed with its data, sent after
# the commit; `celery -A memoryhub beat` runs the relay that re-sends rows whose task has not finished.
OUTBOX_RELAY_INTERVAL_SECONDS = env_int("OUTBOX_RELAY_INTERVAL_SECONDS", 10, minimum=1)
OUTBOX_REDISPATCH_AFTER_SECONDS = env_int("OUTBOX_REDISPATCH_AFTER_SECONDS", 60, minimum=1)
OUTBOX_BACKOFF_MAX_SECONDS = env_int("OUTBOX_BACKOFF_MAX_SECONDS", 3600, minimum=1)
OUTBOX_RETENTION_HOURS = env_int("OUTBOX_RETENTION_HOURS", 48, minimum=1)
# Without a broker, outbound work (webhook deliveries) runs on background threads after the response. Not an
# environment setting: only a test wrapped in one uncommitted transaction turns it off (tests/conftest.py), as
# no other connection could see or write that test's rows.
OUTBOX_BACKGROUND_THREADS = True
# Long-term memories past their expiresAt leave every read at once; this sweep deletes their rows and vectors.
LONGTERM_EXPIRY_SWEEP_SECONDS = env_int("LONGTERM_EXPIRY_SWEEP_SECONDS", 300, minimum=1)
# One queue per kind of background work, so each can get its own worker pool (docs/scaling.md); a worker
# started without -Q consumes them all.
CELERY_TASK_QUEUES = [Queue(name, routing_key=name) for name in ("celery", "diaries", "tables", "embeddings", "outbox")]
CELERY_TASK_ROUTES = (
    # The jobs after a turn share one task, `turn_jobs.run`: it goes to the queue its job registered (diaries and
    # compaction: "diaries", the summariser; table edits: "tables"; the audit and webhook deliveries: "celery").
    "memoryhub.turn_jobs.route",
    {
        "diaries.*": {"queue": "diaries"},  # diaries.plan_diary, the former task name (a thin alias)
        "compact.*": {"queue": "diaries"},  # the summariser again
        "tables.*": {"queue": "tables"},
        "longterm.*": {"queue": "embeddings"},  # long-term memories' maintenance (vectors)
        "history.*": {"queue": "embeddings"},  # message vectors of the history index
        "outbox.*": {"queue": "outbox"},
    },
)
CELERY_BEAT_SCHEDULE = {
    "outbox-relay": {"task": "outbox.relay", "schedule": float(OUTBOX_RELAY_INTERVAL_SECONDS)},
    "longterm-delete-expired": {
        "task": "longterm.delete_expired_memories",
        "schedule": float(LONGTERM_EXPIRY_SWEEP_SECONDS),
    },
}

# Data lifecycle (docs/data-lifecycle.md): an export's file is kept EXPORT_TTL_HOURS, then the sweep deletes it.
EXPORT_TTL_HOURS = env_int("EXPORT_TTL_HOURS", 24, minimum=1)
# Imports (docs/data-lifecycle.md): the uploaded gzip file, what it may decompress to, one line, and its records.
IMPORT_MAX_UPLOAD_BYTES = env_int("IMPORT_MAX_UPLOAD_BYTES", 32 * 1024 * 1024, minimum=1024)
IMPORT_MAX_BYTES = env_int("IMPORT_MAX_BYTES", 256 * 1024 * 1024, minimum=1024)
IMPORT_MAX_LINE_BYTES = env_int("IMPORT_MAX_LINE_BYTES", 4 * 1024 * 1024, minimum=1024)
IMPORT_MAX_RECORDS = env_int("IMPORT_MAX_RECORDS", 500_000, minimum=1)
CELERY_BEAT_SCHEDULE["lifecycle-delete-expired-exports"] = {
    "task": "lifecycle.delete_expired_exports",
    "schedule": 600.0,
}
# Retention (per product, GET/PATCH /v1/product): the pruning sweep runs every RETENTION_PRUNE_SECONDS.
RETENTION_PRUNE_SECONDS = env_int("RETENTION_PRUNE_SECONDS", 3600, minimum=1)
CELERY_BEAT_SCHEDULE["lifecycle-prune"] = {"task": "lifecycle.prune", "schedule": float(RETENTION_PRUNE_SECONDS)}
# Webhooks (docs/webhooks.md): per-attempt timeout, retries with backoff for WEBHOOK_RETRY_WINDOW_SECONDS, and
# targets on loopback/link-local/private addresses refused unless WEBHOOK_ALLOW_PRIVATE=1 (the tests' receivers).
WEBHOOK_ALLOW_PRIVATE = env_bool("WEBHOOK_ALLOW_PRIVATE", False)
WEBHOOK_TIMEOUT_MS = env_int("WEBHOOK_TIMEOUT_MS", 10000, minimum=1)
WEBHOOK_RETRY_BASE_SECONDS = env_int("WEBHOOK_RETRY_BASE_SECONDS", 30, minimum=1)
WEBHOOK_RETRY_MAX_SECONDS = env_int("WEBHOOK_RETRY_MAX_SECONDS", 6 * 3600, minimum=1)
WEBHOOK_RETRY_WINDOW_SECONDS = env_int("WEBHOOK_RETRY_WINDOW_SECONDS", 24 * 3600, minimum=1)
WEBHOOK_SWEEP_SECONDS = env_int("WEBHOOK_SWEEP_SECONDS", 10, minimum=1)
WEBHOOK_RETENTION_HOURS = env_int("WEBHOOK_RETENTION_HOURS", 7 * 24, minimum=1)
# At most this many endpoints per product (422 webhook_limit_reached beyond), and the first attempts of one
# event, across all its endpoints, get this much time in all: an attempt starting later waits for a retry.
WEBHOOK_MAX_ENDPOINTS_PER_PRODUCT = env_int("WEBHOOK_MAX_ENDPOINTS_PER_PRODUCT", 20, minimum=1)
WEBHOOK_EVENT_DEADLINE_SECONDS = env_int("WEBHOOK_EVENT_DEADLINE_SECONDS", 30, minimum=1)
CELERY_BEAT_SCHEDULE["webhooks-retry-due"] = {"task": "webhooks.retry_due", "schedule": float(WEBHOOK_SWEEP_SECONDS)}

# --- Outbound services (all optional).
EMBEDDING_BASE_URL = env_url("EMBEDDING_BASE_URL", ("http", "https"))
# Without EMBEDDING_BASE_URL: the bundled model, "e5-use-minilm" (the default: e5 with USE and an English model
# beside it), "e5-minilm" (the default of 2026-12-07), "e5-small" (e5 alone) or "use"; switching changes the
# embedding identity, so run `manage.py reindex_embeddings` (docs/recall.md).
EMBEDDING_LOCAL_MODEL = env_str("EMBEDDING_LOCAL_MODEL", "e5-use-minilm")
if EMBEDDING_LOCAL_MODEL not in ("e5-use-minilm", "e5-minilm", "e5-small", "use"):
    choices = "'e5-use-minilm', 'e5-minilm', 'e5-small' or 'use'"
    raise ImproperlyConfigured(f"EMBEDDING_LOCAL_MODEL must be {choices}, got {EMBEDDING_LOCAL_MODEL!r}")
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", "text-embedding-3-small")
EMBEDDING_DIMENSIONS = env_int("EMBEDDING_DIMENSIONS", 512, minimum=1)
EMBEDDING_API_KEY = env_str("EMBEDDING_API_KEY")
EMBEDDING_TIMEOUT_SECONDS = env_int("EMBEDDING_TIMEOUT_SECONDS", 10, minimum=1)
QDRANT_URL = env_str("QDRANT_URL")
# Hybrid long-term search and recall (docs/recall.md): the keyword ranking's RRF weight beside the semantic
# one's 1, the RRF constant and the floor on the semantic cosine, all measured by bench/embedders.py.
SEARCH_KEYWORD_WEIGHT = env_float("SEARCH_KEYWORD_WEIGHT", 0.1, bounds=(0.0, 100.0))
SEARCH_RRF_K = env_int("SEARCH_RRF_K", 5, minimum=1)
# Unset: the floor measured for the configured bundled embedder (0.18 for e5-minilm, 0.15 for the others).
SEARCH_MIN_SCORE = env_float("SEARCH_MIN_SCORE", None, bounds=(-1.0, 1.0))  # a cosine, as a request's minScore
# Long-term memories each process holds for hybrid and semantic search (memories/longterm/resident.py); 0: none.
SEARCH_HELD_MEMORY_MB = env_int("SEARCH_HELD_MEMORY_MB", 128, minimum=0)
# A user's history each process holds for history search and recall (memories/history/resident.py); 0: none.
HISTORY_HELD_MEMORY_MB = env_int("HISTORY_HELD_MEMORY_MB", 64, minimum=0)
SUMMARIZER_BASE_URL = env_url("SUMMARIZER_BASE_URL", ("http", "https"))
SUMMARIZER_MODEL = env_str("SUMMARIZER_MODEL", "gpt-4o-mini")
SUMMARIZER_API_KEY = env_str("SUMMARIZER_API_KEY")
SUMMARIZER_TIMEOUT_SECONDS = env_int("SUMMARIZER_TIMEOUT_SECONDS", 30, minimum=1)
# Optional model judge for long-term memory admission (docs/long-term-memories.md): asked only when the
# rules are uncertain; a timeout or an error keeps the rules' verdict. Unset URL: rules alone, offline.
ADMISSION_JUDGE_URL = env_url("ADMISSION_JUDGE_URL", ("http", "https"))
ADMISSION_JUDGE_MODEL = env_str("ADMISSION_JUDGE_MODEL", "gpt-4o-mini")
ADMISSION_JUDGE_API_KEY = env_str("ADMISSION_JUDGE_API_KEY")
ADMISSION_JUDGE_TIMEOUT_MS = env_int("ADMISSION_JUDGE_TIMEOUT_MS", 3000, minimum=1)
HINOS_MEMORY_URL = env_url("HINOS_MEMORY_URL", ("http", "https"))
HINOS_MEMORY_TIMEOUT_MS = env_int("HINOS_MEMORY_TIMEOUT_MS", 10000, minimum=1)
HINOS_MEMORY_TOKEN = env_str("HINOS_MEMORY_TOKEN")
# One HINOS_MEMORY_URL serves every product: "product" prefixes the user and conversation ids sent with the
# product's id, so products never share a memory; "none" sends them raw (a single-tenant deployment).
HINOS_MEMORY_SCOPE = env_str("HINOS_MEMORY_SCOPE", "product")
if HINOS_MEMORY_SCOPE not in ("product", "none"):
    raise ImproperlyConfigured(f"HINOS_MEMORY_SCOPE must be product or none, got {HINOS_MEMORY_SCOPE!r}")

# --- Prompt templates (docs/contract.md "Prompt size limits"): far above any real prompt, so a template
# repeating {{userMessage}} cannot make one prepare build, store and return hundreds of megabytes.
TEMPLATE_MAX_CHARS = env_int("MEMORYHUB_TEMPLATE_MAX_CHARS", 100_000, minimum=1)
TEMPLATE_MAX_PLACEHOLDERS = env_int("MEMORYHUB_TEMPLATE_MAX_PLACEHOLDERS", 100, minimum=1)
PROMPT_MAX_CHARS = env_int("MEMORYHUB_PROMPT_MAX_CHARS", 2_000_000, minimum=1)
INSPECTOR_PROMPT_MAX_CHARS = env_int("MEMORYHUB_INSPECTOR_PROMPT_MAX_CHARS", 200_000, minimum=1)

# --- API
# A minted tool token's lifetime without ttlSeconds; a token never lives longer than 24 h (memories/services/tools.py).
TOOL_TOKEN_DEFAULT_TTL_SECONDS = env_int("TOOL_TOKEN_DEFAULT_TTL_SECONDS", 15 * 60, minimum=1, maximum=24 * 3600)
IDEMPOTENCY_KEY_RETENTION_HOURS = env_int("IDEMPOTENCY_KEY_RETENTION_HOURS", 48, minimum=24)
RATE_LIMIT_PER_KEY = env_str("MEMORYHUB_RATE_LIMIT", "6000/min")  # each key or tool token
# All of a product's keys and tool tokens together: a second key or a minted token adds nothing to it.
RATE_LIMIT_PER_PRODUCT = env_str("MEMORYHUB_RATE_LIMIT_PER_PRODUCT", RATE_LIMIT_PER_KEY)
# Failed authentications (unknown, revoked or malformed keys and tokens) per client address (REMOTE_ADDR); "off".
RATE_LIMIT_AUTH_FAILURES = env_str("MEMORYHUB_AUTH_FAILURE_LIMIT", "60/min")
if RATE_LIMIT_AUTH_FAILURES == "off":
    RATE_LIMIT_AUTH_FAILURES = None
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["memories.api.authentication.ProductKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["memoryhub.api.authentication.IsProductClient"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["memoryhub.api.parsers.StrictJSONParser"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "memoryhub.api.negotiation.JSONFirstContentNegotiation",
    # Answers are JSON only: a `format` query parameter picks no renderer, so `?format=api` on a resource is
    # ignored instead of a 404 (only /api/schema/ reads it: memoryhub/api/schema_views.py).
    "URL_FORMAT_OVERRIDE": None,
    "DEFAULT_THROTTLE_CLASSES": ["memoryhub.api.throttling.PerKeyRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "per_key": RATE_LIMIT_PER_KEY,
        "per_product": RATE_LIMIT_PER_PRODUCT,
        "auth_failures": RATE_LIMIT_AUTH_FAILURES,
    },
    "EXCEPTION_HANDLER": "memoryhub.api.handler.envelope_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "memoryhub.api.openapi.MemoryhubAutoSchema",  # tags, summaries: memoryhub/api/openapi.py
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "memoryhub",
    "DESCRIPTION": "Memory and state for AI chat, role-play and agent products. Request bodies are JSON of at "
    "most 2.5 MiB (else 413 request_too_large) nested at most 512 levels (else 400 invalid_request with "
    "details.depth and details.limit); a string or key with U+0000 or a lone surrogate, or a number "
    "beyond a double's range, is 400 invalid_request with details.path, as is a query parameter with NUL "
    "(details.field). The contract: docs/contract.md.",
    "VERSION": __version__,  # memoryhub.__version__, the one version
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 0, "maximum": MAX_ROW_ID}},  # converters.py
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "memoryhub.api.openapi.add_error_envelope",
    ],
}

_VALIDATION = "django.contrib.auth.password_validation"
AUTH_PASSWORD_VALIDATORS: list[dict[str, object]] = [
    {"NAME": f"{_VALIDATION}.UserAttributeSimilarityValidator"},
    {"NAME": f"{_VALIDATION}.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    {"NAME": f"{_VALIDATION}.CommonPasswordValidator"},
    {"NAME": f"{_VALIDATION}.NumericPasswordValidator"},
]

# Admin login throttling (docs/production.md, "Admin logins"): django-axes counts failed logins in the database
# (the same on SQLite and PostgreSQL, whatever the cache), per client address and per username. The limit-th
# failure locks that address or that username out for the cool-off; failing again meanwhile does not extend it,
# so an attacker cannot keep an operator locked out beyond the cool-off by guessing on.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env_int("ADMIN_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("ADMIN_LOGIN_COOLOFF_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "admin/locked_out.html"
ADMIN_LOGIN_TRUSTED_PROXIES = env_int("ADMIN_LOGIN_TRUSTED_PROXIES", 0, minimum=0)
AXES_CLIENT_IP_CALLABLE = "memoryhub.login_throttle.client_address"
LANGUAGE_CODE = "en-us"
# The console and the admin speak English and Simplified Chinese (docs/console.md); compiled catalogues in locale/.
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
# whitenoise serves STATIC_ROOT (filled by `manage.py collectstatic`) and, with finders on, the apps' own static
# directories too, so `dev.py serve` and the tests need no collectstatic step (docs/production.md).
WHITENOISE_USE_FINDERS = env_bool("WHITENOISE_USE_FINDERS", True)
with contextlib.suppress(OSError):  # whitenoise warns about a missing STATIC_ROOT (a read-only image has its copy)
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_MAX_AGE = 3600
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
}
