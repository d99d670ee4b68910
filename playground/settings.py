"""Settings, driven by the environment.

A fresh machine needs no configuration: SQLite, the in-memory channel layer and the embedded
local API. `DATABASE_URL` and `REDIS_URL` switch to PostgreSQL and channels-redis.
"""

import os
import secrets
from pathlib import Path

import dj_database_url
from cryptography.fernet import Fernet

from playground.lib.environment import collected, env_bool, env_list, persisted_secret

BASE_DIR = Path(__file__).resolve().parent.parent
(BASE_DIR / "var").mkdir(exist_ok=True)


DEBUG = env_bool("DJANGO_DEBUG")
SECRET_KEY = os.environ.get("SECRET_KEY") or persisted_secret(
    BASE_DIR / ".secret_key", lambda: secrets.token_urlsafe(50)
)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

# Behind TLS (PLAYGROUND_HTTPS=true) every cookie is secure and HTTP redirects to HTTPS;
# `manage.py check --deploy` passes in that mode.
HTTPS = env_bool("PLAYGROUND_HTTPS")
SECURE_SSL_REDIRECT = HTTPS
# The API is never redirected: the playground calls its embedded local API over loopback HTTP (no proxy,
# no X-Forwarded-Proto), and an API client cannot follow a redirect of a POST anyway. The TLS proxy in front
# is where plain HTTP from outside is refused or redirected (docs/operations.md, "HTTPS mode").
SECURE_REDIRECT_EXEMPT = [r"^local/v1/", r"^health/", r"^metrics$"]
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
CSRF_FAILURE_VIEW = "playground.lib.errors.csrf_failure"  # a refused form in words, in the layout
SECURE_HSTS_SECONDS = 31536000 if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if HTTPS else None
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "channels",
    "django_htmx",
    "template_partials",
    "playground.accounts",
    "playground.connections",
    "playground.teams",
    "playground.catalog",
    "playground.chat",
    "playground.rerank",
    "playground.speech",
    "playground.batches",
    "playground.sharing",
    "playground.evaluate",
    "playground.prompts",
    "playground.datasets",
    "playground.sso",
    "playground.operators",
]

# What can be shared: each feature declares its kind in its own sharing.py (see playground/sharing/kinds.py).
SHARE_KINDS = [
    "playground.chat.sharing.ConversationKind",
    "playground.rerank.sharing.RerankKind",
    "playground.speech.sharing.SpeechKind",
    "playground.batches.sharing.BatchKind",
    "playground.evaluate.sharing.EvaluationKind",
    "playground.evaluate.sharing.RunKind",
    "playground.evaluate.sharing.ComparisonKind",
    "playground.prompts.sharing.PromptVersionKind",
]

MIDDLEWARE = [
    "playground.lib.metrics.RequestMetricsMiddleware",
    "playground.lib.compression.HtmlGZipMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "playground.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "playground.inputs.input_middleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "playground.connections.middleware.UnreadableKeyMiddleware",
]

ROOT_URLCONF = "playground.urls"
ASGI_APPLICATION = "playground.asgi.application"

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
                "playground.sso.context.sso",
            ],
            "builtins": ["template_partials.templatetags.partials", "playground.lib.json_tags"],
        },
    },
]

DATABASES = {
    "default": dj_database_url.config(default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}", conn_max_age=0),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The test database is a file so that a live daphne subprocess can share it with the test process.
    # One file per test run, so that concurrent runs on one machine do not share it.
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / "var" / f"test-db-{os.getpid()}.sqlite3")}
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
    }
    # Kept open. Closing one after each websocket frame's database work (they share one thread) costs that frame
    # a new connection with the pragmas above next time (and the last one to close checkpoints the WAL):
    # 6 ms of time to first token in bench/relay.py (docs/performance.md). Threads of HTTP requests end with their
    # request, and their connection with them.
    DATABASES["default"]["CONN_MAX_AGE"] = None
# PostgreSQL connections per server process: every request in flight and every background thread holds one,
# so a burst of requests waits for a free one (up to 30 s) instead of exceeding the server's max_connections.
# 0 turns the pool off (one connection per thread, closed after each request). See docs/operations.md.
DB_POOL = int(os.environ.get("PLAYGROUND_DB_POOL", "20"))
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and DB_POOL:
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {"min_size": 1, "max_size": DB_POOL, "timeout": 30}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "")
# Connections per server process to Redis (see docs/operations.md, "Redis pool").
REDIS_POOL = int(os.environ.get("PLAYGROUND_REDIS_POOL", "1000"))
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 defaults socket_timeout to 5 s, which aborts the layer's blocking BZPOPMIN
            # (channels_redis#422): every idle websocket would crash after 5 s. No timeout, as before 8.
            # The pool bounds the Redis commands in flight at once in this process (each live generation
            # publishes, each websocket joins and leaves groups); past it redis-py raises MaxConnectionsError
            # rather than wait. redis-py's default, 100, runs out at about 100 concurrent streams.
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        "socket_timeout": None,
                        "socket_connect_timeout": 3,
                        "max_connections": REDIS_POOL,
                    }
                ],
                "capacity": 1500,
                "expiry": 30,
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 1500}}}

# The cache holds the login and sign-up throttles: Redis when configured (shared by every process), else
# per process memory.
if REDIS_URL:
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL, "KEY_PREFIX": "pg"}
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Throttles (accounts/throttle.py): failed logins per address and per account, sign-ups per address, per window.
LOGIN_FAILURE_LIMIT = int(os.environ.get("PLAYGROUND_LOGIN_FAILURES", "10"))
SIGNUP_LIMIT = int(os.environ.get("PLAYGROUND_SIGNUPS_PER_IP", "10"))
THROTTLE_WINDOW = int(os.environ.get("PLAYGROUND_THROTTLE_WINDOW", "900"))
# Behind a proxy, the header that carries the client's address (its last hop is used), e.g. X-Forwarded-For.
CLIENT_IP_HEADER = os.environ.get("PLAYGROUND_CLIENT_IP_HEADER", "")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Passwords (local accounts, the break-glass path: LocalBackend settles them), then single sign-on
# (playground/sso/backends.py). ModelBackend stays listed so that sessions signed in under its path stay valid.
AUTHENTICATION_BACKENDS = [
    "playground.sso.backends.LocalBackend",
    "django.contrib.auth.backends.ModelBackend",
    "playground.sso.backends.OIDCBackend",
]
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "chat:index"
LOGOUT_REDIRECT_URL = "accounts:login"

# Who may make an account (docs/operations.md, "Who may sign up"): "open" (anyone), "invite" (local sign-up only
# with a team invite link; single sign-on still makes accounts), "sso" (accounts come from single sign-on only).
SIGNUP_MODE = os.environ.get("PLAYGROUND_SIGNUP", "open").strip().lower()
if SIGNUP_MODE not in {"open", "invite", "sso"}:
    raise ValueError(f"PLAYGROUND_SIGNUP must be open, invite or sso, not {SIGNUP_MODE!r}.")
# "on": anyone may sign in with a password; "superusers": only superusers (the break-glass path beside SSO).
LOCAL_LOGIN = os.environ.get("PLAYGROUND_LOCAL_LOGIN", "on").strip().lower()
if LOCAL_LOGIN not in {"on", "superusers"}:
    raise ValueError(f"PLAYGROUND_LOCAL_LOGIN must be on or superusers, not {LOCAL_LOGIN!r}.")

# Single sign-on with OpenID Connect (playground/sso, built on mozilla-django-oidc; docs/operations.md). Off unless
# an issuer is set; its endpoints come from the issuer's discovery document.
OIDC_ISSUER = os.environ.get("PLAYGROUND_OIDC_ISSUER", "")
OIDC_RP_CLIENT_ID = os.environ.get("PLAYGROUND_OIDC_CLIENT_ID", "")
OIDC_RP_CLIENT_SECRET = os.environ.get("PLAYGROUND_OIDC_CLIENT_SECRET", "")
OIDC_RP_SCOPES = os.environ.get("PLAYGROUND_OIDC_SCOPES", "openid email profile groups")
OIDC_RP_SIGN_ALGO = os.environ.get("PLAYGROUND_OIDC_SIGN_ALGO", "RS256")
OIDC_PROVIDER_NAME = os.environ.get("PLAYGROUND_OIDC_NAME", "single sign-on")
OIDC_USERNAME_CLAIM = os.environ.get("PLAYGROUND_OIDC_USERNAME_CLAIM", "preferred_username")
OIDC_EMAIL_CLAIM = os.environ.get("PLAYGROUND_OIDC_EMAIL_CLAIM", "email")
OIDC_GROUPS_CLAIM = os.environ.get("PLAYGROUND_OIDC_GROUPS_CLAIM", "groups")
# Sign-in is refused, in words, to anyone outside this group (unset: no such rule).
OIDC_REQUIRED_GROUP = os.environ.get("PLAYGROUND_OIDC_REQUIRED_GROUP", "")
# Groups to teams, applied at every sign-in: "ml-demo=Demos:member; ml-leads=Demos:admin" (sso/groups.py).
OIDC_GROUP_TEAMS = os.environ.get("PLAYGROUND_OIDC_GROUP_TEAMS", "")
OIDC_USE_PKCE = True
OIDC_USE_NONCE = True
OIDC_TIMEOUT = float(os.environ.get("PLAYGROUND_OIDC_TIMEOUT", "10"))
OIDC_STORE_ID_TOKEN = True  # the hint for the provider's sign-out (end_session_endpoint)
OIDC_AUTHENTICATION_CALLBACK_URL = "sso:callback"
OIDC_REDIRECT_REQUIRE_HTTPS = HTTPS

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "static"]
# The chat page's scripts and styles, one file each, built from static/ (playground/lib/bundles.py).
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "playground.lib.bundles.BundleFinder",
]
BUNDLE_ROOT = BASE_DIR / "var" / "bundles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "playground.lib.static_files.FingerprintedStorage"},
}


# The collected files (`make run`, the Procfile's release) are linked by their fingerprinted names and served with
# their gzip copies, as immutable; until they are collected, or once a file of static/ changed since, by their plain
# names straight from static/ (uncompressed), so `make test` needs no collectstatic and never serves a stale copy.
# (WhiteNoise's finders take precedence over STATIC_ROOT; lib/static_files.py's storage links the plain names.)
WHITENOISE_USE_FINDERS = not (
    collected(STATICFILES_DIRS[0], STATIC_ROOT) and (STATIC_ROOT / "staticfiles.json").exists()
)

# Saved audio clips, uploads and the local API's files live here, unless PLAYGROUND_S3_BUCKET names a bucket.
DATA_DIR = Path(os.environ.get("PLAYGROUND_DATA_DIR", BASE_DIR / "var"))
MEDIA_ROOT = DATA_DIR / "media"
# Files in an S3-compatible bucket shared by every server (docs/operations.md, "Files"); the credentials come from
# boto3's usual places (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile, an instance role).
S3_BUCKET = os.environ.get("PLAYGROUND_S3_BUCKET", "")
if S3_BUCKET:
    S3_ENDPOINT_URL = os.environ.get("PLAYGROUND_S3_ENDPOINT_URL") or None
    STORAGES["default"] = {
        "BACKEND": "playground.lib.files.S3Storage",
        "OPTIONS": {
            "bucket_name": S3_BUCKET,
            "endpoint_url": S3_ENDPOINT_URL,
            "region_name": os.environ.get("PLAYGROUND_S3_REGION") or None,
            "location": os.environ.get("PLAYGROUND_S3_PREFIX", ""),
            # Path-style addresses (https://host/bucket/key) unless told otherwise: what MinIO, Ceph and others need.
            "addressing_style": os.environ.get("PLAYGROUND_S3_ADDRESSING_STYLE", "path" if S3_ENDPOINT_URL else "auto"),
            # Files are served by the playground, never by a public bucket URL; names are unique, so overwrite.
            "default_acl": None,
            "file_overwrite": True,
        },
    }
DATA_UPLOAD_MAX_MEMORY_SIZE = 50 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# Connection keys are encrypted with MultiFernet: newest key first, older keys still decrypt.
# For local runs a generated key is kept in `.encryption_key` (ignored by git); production sets the variable.
ENCRYPTION_KEYS = env_list("PLAYGROUND_ENCRYPTION_KEYS") or [
    persisted_secret(BASE_DIR / ".encryption_key", lambda: Fernet.generate_key().decode())
]

# Hosts users may point connections at, and the local API may fetch media parts from (e.g.
# "api.example.com,*.example.org"); checked by playground/lib/guard.py. When unset, any public host is allowed
# and private, loopback and link-local addresses are refused.
ALLOWED_UPSTREAM_HOSTS = env_list("PLAYGROUND_ALLOWED_UPSTREAM_HOSTS")

# The embedded local API on this same server; the built-in Local connection points here.
# LOCAL_API=off leaves it out (no /local/v1, no Local connection): the playground then reaches only the
# providers users add. The playground mints each user's local key only through LOCAL_API_KEY_MINTER, a
# function `mint(label, replaces=None) -> raw key` (see playground/localapi/keys.py).
LOCAL_API = env_bool("LOCAL_API", True)
if LOCAL_API:
    INSTALLED_APPS.insert(INSTALLED_APPS.index("playground.catalog") + 1, "playground.localapi")
LOCAL_API_KEY_MINTER = "playground.localapi.keys.mint" if LOCAL_API else ""
PORT = int(os.environ.get("PORT", "8000"))
LOCAL_API_BASE_URL = os.environ.get("LOCAL_API_BASE_URL", f"http://127.0.0.1:{PORT}/local/v1")
LOCAL_API_KEYS = env_list("LOCAL_API_KEYS")
# Generated tokens per second for the local demo models; 0 means unlimited (tests and benchmarks).
LOCAL_API_TOKEN_RATE = float(os.environ.get("LOCAL_API_TOKEN_RATE", "40"))
# Rate limits per key of the local API.
LOCAL_API_RPM = int(os.environ.get("LOCAL_API_RPM", "600"))
LOCAL_API_TPM = int(os.environ.get("LOCAL_API_TPM", "2000000"))
# Media parts of the local API (engines/media.py), checked from their header before anything is decoded:
# pixels of an image or a video frame, seconds of audio or video, pages of a PDF; decoding runs in a pool of
# LOCAL_API_MEDIA_WORKERS threads, so parallel uploads wait their turn instead of adding up in memory.
LOCAL_API_MEDIA_MAX_PIXELS = int(os.environ.get("LOCAL_API_MEDIA_MAX_PIXELS", "25000000"))
LOCAL_API_MEDIA_MAX_SECONDS = float(os.environ.get("LOCAL_API_MEDIA_MAX_SECONDS", "600"))
LOCAL_API_MEDIA_MAX_PAGES = int(os.environ.get("LOCAL_API_MEDIA_MAX_PAGES", "50"))
LOCAL_API_MEDIA_WORKERS = int(os.environ.get("LOCAL_API_MEDIA_WORKERS", "2"))
# Media parts given by address (http/https, through the outbound guard): timeouts in seconds.
LOCAL_API_FETCH_CONNECT_TIMEOUT = float(os.environ.get("LOCAL_API_FETCH_CONNECT_TIMEOUT", "5"))
LOCAL_API_FETCH_READ_TIMEOUT = float(os.environ.get("LOCAL_API_FETCH_READ_TIMEOUT", "10"))
LOCAL_API_FETCH_TOTAL_TIMEOUT = float(os.environ.get("LOCAL_API_FETCH_TOTAL_TIMEOUT", "30"))

# Upstream HTTP client.
UPSTREAM_TIMEOUT = float(os.environ.get("PLAYGROUND_UPSTREAM_TIMEOUT", "120"))
UPSTREAM_CONNECT_TIMEOUT = float(os.environ.get("PLAYGROUND_UPSTREAM_CONNECT_TIMEOUT", "10"))
UPSTREAM_MAX_CONNECTIONS = int(os.environ.get("PLAYGROUND_UPSTREAM_MAX_CONNECTIONS", "500"))
# Benchmarks only: chat deltas carry `t`, the wall-clock time their first upstream chunk reached the server.
DEBUG_RELAY_TIMING = env_bool("DEBUG_RELAY_TIMING")

# Background work (playground/lib/detached.py): every server process stamps the rows of its running
# generations, clips and batches every HEARTBEAT seconds; a row still running whose stamp is older than
# STALE seconds lost its process and is ended as interrupted (batches are taken over instead).
BACKGROUND_HEARTBEAT_SECONDS = float(os.environ.get("PLAYGROUND_HEARTBEAT_SECONDS", "2"))
BACKGROUND_STALE_SECONDS = float(os.environ.get("PLAYGROUND_STALE_SECONDS", "10"))
# Graceful drain (playground/lib/drain.py): after a SIGTERM, how long the work in flight may go on before it is
# ended as interrupted. Keep it under the process manager's own limit (systemd's TimeoutStopSec, Kubernetes'
# terminationGracePeriodSeconds), which kills the process outright.
DRAIN_SECONDS = float(os.environ.get("PLAYGROUND_DRAIN_SECONDS", "60"))
# Resumable evaluation runs (playground/evaluate/resume.py): how often each process looks for live runs to take up
# (left by a draining process, or by a dead one whose heartbeat is STALE seconds old); 0: this process never does.
EVALUATION_RESUME_SECONDS = float(os.environ.get("PLAYGROUND_RESUME_SECONDS", "3"))
# Teams: how often each process checks the batches on team connections for their end (and files their usage).
BATCH_TRACK_SECONDS = float(os.environ.get("PLAYGROUND_BATCH_TRACK_SECONDS", "15"))
# The gate (playground/connections/gate.py): requests at once per connection unless it sets its own; tokens
# reserved for a request whose size cannot be estimated (no max_tokens); how long a request that found every
# slot taken waits for one (evaluations and batch polling; a chat send is refused at once with the numbers).
CONNECTION_CONCURRENCY = int(os.environ.get("PLAYGROUND_CONNECTION_CONCURRENCY", "8"))
GATE_DEFAULT_RESERVATION = int(os.environ.get("PLAYGROUND_GATE_DEFAULT_RESERVATION", "1024"))
GATE_SLOT_WAIT_SECONDS = float(os.environ.get("PLAYGROUND_GATE_SLOT_WAIT_SECONDS", "60"))

# Operators (docs/operations.md): /health/live and /health/ready for a load balancer (each readiness check has
# this many seconds), and /metrics for Prometheus, off (404) unless a token is set: `Authorization: Bearer <token>`.
HEALTH_TIMEOUT = float(os.environ.get("PLAYGROUND_HEALTH_TIMEOUT", "2"))
METRICS_TOKEN = os.environ.get("PLAYGROUND_METRICS_TOKEN", "")

# PLAYGROUND_LOG_FORMAT=json: one JSON object per line, with a line per request (playground.request) and per
# generation (playground.generation), each with its trace id. Plain text otherwise; requests are then not logged.
LOG_FORMAT = os.environ.get("PLAYGROUND_LOG_FORMAT", "text")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        }
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", **({"formatter": "json"} if LOG_FORMAT == "json" else {})}
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.channels.server": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
        "playground.request": {"level": "INFO" if LOG_FORMAT == "json" else "WARNING"},
        "playground.generation": {"level": "INFO" if LOG_FORMAT == "json" else "WARNING"},
    },
}
