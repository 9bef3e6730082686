"""Django settings for Fairway.

Everything that differs between a laptop and a cluster comes from the environment:
DATABASE_URL, REDIS_URL, SECRET_KEY, DEBUG, ALLOWED_HOSTS. With none of them set, Fairway
runs embedded: SQLite under ./var and (when started by `manage.py run`) an embedded Redis.
"""

import os
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from whitenoise.compress import Compressor

from scheduler_core.directory.config import directory_config

# Every variable is read through `env` (django-environ). A value that starts with $ names
# another variable whose value it takes (SECRET_KEY=$OTHER); write \$ for a literal $.
env = environ.Env(escape_proxy=True)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env.str("FAIRWAY_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env.bool("DEBUG", default=False)
_insecure_dev_key = "django-insecure-fairway-embedded-development-key-change-me"
SECRET_KEY = env.str("SECRET_KEY", default=_insecure_dev_key if DEBUG else "")
if not SECRET_KEY:
    # Embedded mode without DEBUG still needs a stable key; keep one per installation.
    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        from django.core.management.utils import get_random_secret_key

        key_file.write_text(get_random_secret_key())
        key_file.chmod(0o600)
    SECRET_KEY = key_file.read_text().strip()
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set")

ALLOWED_HOSTS = env.list(
    "ALLOWED_HOSTS", cast=str.strip, default=["localhost", "127.0.0.1", "[::1]", "testserver"]
)
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", cast=str.strip, default=[])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "scheduler_core",
    "api",
    "console",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Pages and API answers are gzipped for clients that accept it; static files are
    # compressed ahead of time (WhiteNoise above answers them first). BREACH: Django
    # (>= 4.2) pads each compressed response with a random-length filename, and the CSRF
    # token is masked per response. Websockets never pass through this middleware.
    "django.middleware.gzip.GZipMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
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
                "console.navigation.navigation",
            ],
        },
    },
]
WSGI_APPLICATION = None
ASGI_APPLICATION = "config.asgi.application"

# Runs of a statement on one connection before psycopg prepares it (DB_PREPARED_STATEMENTS).
PREPARE_THRESHOLD = 5
DATABASES = {
    "default": {
        **env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'fairway.sqlite3'}"),
        # Seconds a connection is kept for the next request or task (0: closed after each).
        # `manage.py run` gives its web processes WEB_DB_CONN_MAX_AGE: their request threads
        # live as long as the process (config/http_handler.py).
        "CONN_MAX_AGE": env.int("DB_CONN_MAX_AGE", default=0),
        # A kept connection is checked before its first use in a request, so the first
        # request after a database restart is served, not refused.
        "CONN_HEALTH_CHECKS": True,
    }
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web server, the worker and beat read while a cycle writes.
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].update(
        {
            "timeout": 30,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # The scheduler's queries are many and short. JIT compiling one whose estimated cost
    # crosses jit_above_cost (a long IN list on a table that grew since its last ANALYZE)
    # costs far more than running it: 0.4 s instead of 5 ms on an idle machine, and cycles
    # of several seconds in the load test on two busy cores.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("options", "-c jit=off")
    # Prepared statements: planning a query cost PostgreSQL more than running it (a page of
    # the workload list: 1.9 ms planning, 1 ms execution). With parameters bound by the
    # server, psycopg prepares a statement on a connection once it has run it
    # PREPARE_THRESHOLD times; PostgreSQL then parses it once, and plans it once when a
    # generic plan serves as well as a fresh one (scheduler_core/db/cursors.py). Off behind
    # a pooler in transaction mode (PgBouncer before 1.21), which cannot keep a
    # connection's prepared statements.
    if env.bool("DB_PREPARED_STATEMENTS", default=True):
        from scheduler_core.db.cursors import PreparingCursor

        DATABASES["default"]["OPTIONS"].update(
            server_side_binding=True,
            prepare_threshold=PREPARE_THRESHOLD,
            cursor_factory=PreparingCursor,
        )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# Sign-in with the lab's LDAP directory when LDAP_URL is set (README, "Configuration"):
# local users first, then the directory (scheduler_core.directory).
LDAP_DIRECTORY = directory_config(os.environ)
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend"] + (
    ["scheduler_core.directory.backend.DirectoryBackend"] if LDAP_DIRECTORY else []
)
LOGIN_URL = "console:login"
LOGIN_REDIRECT_URL = "console:overview"
LOGOUT_REDIRECT_URL = "console:login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [
    BASE_DIR / "static",
    # Front-end packages come from npm (`npm ci` at setup), served from node_modules.
    ("vendor/htmx", BASE_DIR / "node_modules/htmx.org/dist"),
]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed names, .gz and .br copies made by `manage.py collectstatic` (bin/setup runs it);
    # plain names until then (config/static_storage.py).
    "staticfiles": {"BACKEND": "config.static_storage.FairwayStaticFilesStorage"},
}
# Files not collected yet are served from their source folders.
WHITENOISE_USE_FINDERS = True
# Only the hashed copies are compressed and kept (plain names come from the source folders);
# source maps, read by developer tools only, are not worth a minute of brotli at setup.
WHITENOISE_KEEP_ONLY_HASHED_FILES = True
WHITENOISE_SKIP_COMPRESS_EXTENSIONS = (*Compressor.SKIP_COMPRESS_EXTENSIONS, "map")

# --- Redis, Celery, Channels -------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=not REDIS_URL)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
SCHEDULER_BEAT_INTERVAL = env.float("SCHEDULER_BEAT_INTERVAL", default=2.0)
CELERY_BEAT_SCHEDULE = {
    "scheduling-cycle-safety-net": {
        "task": "scheduler_core.loop.tasks.run_cycle_task",
        "schedule": SCHEDULER_BEAT_INTERVAL,
        "options": {"expires": max(SCHEDULER_BEAT_INTERVAL, 1.0)},
    },
    "fail-stale-simulations": {
        "task": "scheduler_core.whatif.tasks.fail_stale_simulations_task",
        "schedule": 300.0,
        "options": {"expires": 300.0},
    },
    "gpu-usage-roll-up": {
        "task": "scheduler_core.runtime.tasks.gpu_usage_roll_up_task",
        "schedule": 60.0,
        "options": {"expires": 60.0},
    },
    "simulated-runtime-tick": {
        "task": "scheduler_core.runtime.tasks.runtime_tick_task",
        "schedule": 1.0,
        "options": {"expires": 1.0},
    },
}

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # A big cycle sends several messages per event; the default capacity (100)
            # would drop some for a browser subscribed to the whole cluster.
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        # No socket timeout. redis-py's default (5 s) equals the layer's
                        # blocking read (`brpop_timeout`), so an idle socket's read timed
                        # out first and closed every idle websocket (1011). And with any
                        # socket timeout redis-py sends through asyncio.wait_for, which on
                        # Python 3.11 may swallow the cancellation of a closing websocket's
                        # receive: it then never ended. TCP keepalive (redis-py's default)
                        # finds a dead connection instead.
                        "socket_timeout": None,
                        "socket_connect_timeout": 5,
                    }
                ],
                "capacity": 1500,
                "expiry": 60,
            },
        }
    }
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
        }
    }
else:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels.layers.InMemoryChannelLayer",
            "CONFIG": {"capacity": 1500, "expiry": 60},
        }
    }
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- REST framework ------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # DRF's JSON, written by orjson (api/renderers.py)
    "DEFAULT_RENDERER_CLASSES": [
        "api.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "api.filters.FilterBackend",  # django-filter's, skipped when no filter is named
        "rest_framework.filters.OrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_RATES": {
        "submissions": env.str("SUBMISSION_RATE_LIMIT", default="600/min"),
        # agent registrations per client address (POST /api/v1/agents/register/)
        "agent_registrations": env.str("AGENT_REGISTRATION_RATE_LIMIT", default="60/min"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Fairway API",
    "DESCRIPTION": "GPU-cluster workload scheduling: quotas, queues, workloads, simulations.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    # Swagger UI and Redoc assets come from drf-spectacular-sidecar, never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema.forbid_unknown_request_fields",
    ],
    "ENUM_NAME_OVERRIDES": {
        "WorkloadKindEnum": "scheduler_core.choices.WorkloadKind",
        "QueueKindEnum": "api.serializers.queues.QUEUE_KINDS",
        "WorkloadStatusEnum": "scheduler_core.choices.WorkloadStatus",
        "SimulationStatusEnum": "scheduler_core.choices.SimulationStatus",
    },
}

# Scenario files for what-if runs may be a few MB of YAML/JSON.
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
# A retried POST with the same Idempotency-Key is answered from its stored response for
# this long (seconds); older keys are pruned by the runtime tick.
IDEMPOTENCY_KEY_RETENTION = env.float("IDEMPOTENCY_KEY_RETENTION", default=86400.0)

# --- Security when DEBUG is off -----------------------------------------------------------
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
if not DEBUG and env.bool("SECURE_COOKIES", default=False):
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SESSION_COOKIE_HTTPONLY = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"django.channels.server": {"level": "WARNING"}},
}

# --- Live scheduler ---
# Simulated runtime (the default, used by the demo): a running workload with spec `duration`
# completes that long after it (re)starts. Turn off when a real runtime reports completions.
SIMULATED_RUNTIME = env.bool("SIMULATED_RUNTIME", default=True)
# Simulated nodes are alive unless an admin marks them down: the runtime tick refreshes
# their heartbeats. With real nodes, a node silent for NODE_HEARTBEAT_TIMEOUT seconds is
# marked down and its workloads are evicted (reason fault, backoff limit applies).
SIMULATED_NODES = env.bool("SIMULATED_NODES", default=True)
NODE_HEARTBEAT_TIMEOUT = env.float("NODE_HEARTBEAT_TIMEOUT", default=60.0)
# GPU usage history for time-based fairshare: one UsageSample per queue per pool per interval.
USAGE_SAMPLE_INTERVAL = env.float("USAGE_SAMPLE_INTERVAL", default=60.0)
# CycleRecords older than this many seconds are pruned by the runtime tick.
CYCLE_RECORD_RETENTION = env.float("CYCLE_RECORD_RETENTION", default=7 * 86400.0)
# Celery queue of scheduling cycles ("" = Celery's default queue). A dedicated queue served
# by its own worker keeps cycles from waiting behind long what-if simulations.
SCHEDULER_CYCLE_QUEUE = env.str("SCHEDULER_CYCLE_QUEUE", default="")
# A worker runs cycles back to back while they are wanted, for at most this many seconds
# per task; between cycles it waits up to SCHEDULER_LOOP_WAIT seconds for the next
# simulated run to end (checking for new requests every SCHEDULER_LOOP_POLL seconds).
SCHEDULER_LOOP_SECONDS = env.float("SCHEDULER_LOOP_SECONDS", default=10.0)
SCHEDULER_LOOP_WAIT = env.float("SCHEDULER_LOOP_WAIT", default=1.0)
SCHEDULER_LOOP_POLL = env.float("SCHEDULER_LOOP_POLL", default=0.01)
# ... and with nothing wanted, it lingers this many seconds for a request before it stops
# (agents' reports come one after the other: one loop schedules them, not a task each).
SCHEDULER_LOOP_LINGER = env.float("SCHEDULER_LOOP_LINGER", default=1.0)
# A cycle takes in at most this many waiting workloads it has not seen before (the longest
# waiting first); a flood of submissions is so taken in over a few short cycles, which
# follow one another at once (0: no bound).
SCHEDULER_CYCLE_NEW_WORKLOADS = env.int("SCHEDULER_CYCLE_NEW_WORKLOADS", default=1000)
# Seconds after which a start that nothing was heard of is sent again, with a new epoch, to
# an executor that allows it (Capability.RESENDS_STARTS: node agents).
RUN_START_RESEND_AFTER = env.float("RUN_START_RESEND_AFTER", default=10.0)
# Namespace of the scheduler's cache keys and locks (separate installations sharing a Redis).
SCHEDULER_KEY_PREFIX = env.str("SCHEDULER_KEY_PREFIX", default="fairway")
# Seconds the non-PostgreSQL (Redis) cycle lock lives without renewal if its holder dies.
SCHEDULER_LOCK_TTL = env.float("SCHEDULER_LOCK_TTL", default=10.0)
# Pending workloads get a new reason at once when its kind changes; changed numbers in a
# reason and shifted queue positions are rewritten for the whole queue at most this often
# (seconds), so a queue of thousands is not rewritten every cycle. 0 = every cycle.
PENDING_REASON_REFRESH = env.float("PENDING_REASON_REFRESH", default=5.0)
# ... and at most this many rows per cycle (a refresh of a longer queue takes several cycles).
PENDING_REASON_REFRESH_ROWS = env.int("PENDING_REASON_REFRESH_ROWS", default=1000)
# --- node agents (docs/agent.md) ---
# Seconds between an agent's heartbeats and usage reports (told in its welcome); a node
# silent for AGENT_UNREACHABLE_AFTER seconds takes no new pods, and after AGENT_LOST_AFTER
# its pods are lost and re-queued. Its runs fence themselves (stop) after
# AGENT_LOST_AFTER - 2 x the pool's grace period - 5 s without the server: the default 720
# keeps runs through an outage of the server, its PostgreSQL or its Redis of up to 655 s
# (grace 30 s). GPU and run usage samples are kept AGENT_USAGE_RETENTION seconds.
AGENT_HEARTBEAT_INTERVAL = env.float("AGENT_HEARTBEAT_INTERVAL", default=2.0)
AGENT_USAGE_INTERVAL = env.float("AGENT_USAGE_INTERVAL", default=5.0)
AGENT_UNREACHABLE_AFTER = env.float("AGENT_UNREACHABLE_AFTER", default=15.0)
AGENT_LOST_AFTER = env.float("AGENT_LOST_AFTER", default=720.0)
AGENT_USAGE_RETENTION = env.float("AGENT_USAGE_RETENTION", default=3600.0)
# GPU usage history (docs/usage.md): raw samples are rolled up into one row per GPU, minute
# and holding workload, then per hour; minute rows are kept GPU_USAGE_MINUTE_RETENTION
# seconds (2 days: the 24 h charts), hour rows GPU_USAGE_HOUR_RETENTION (90 days). A minute
# is rolled up GPU_USAGE_ROLLUP_LAG seconds after it ends (samples still on their way).
GPU_USAGE_MINUTE_RETENTION = env.float("GPU_USAGE_MINUTE_RETENTION", default=2 * 86400.0)
GPU_USAGE_HOUR_RETENTION = env.float("GPU_USAGE_HOUR_RETENTION", default=90 * 86400.0)
GPU_USAGE_ROLLUP_LAG = env.float("GPU_USAGE_ROLLUP_LAG", default=15.0)
# What one agent may send: bytes of output stored per run (the log says where it was cut),
# frames a second per connection (over it, frames wait; none is dropped) and a burst.
AGENT_LOG_MAX_BYTES = env.int("AGENT_LOG_MAX_BYTES", default=64 * 1024 * 1024)
AGENT_MAX_FRAMES_PER_SECOND = env.float("AGENT_MAX_FRAMES_PER_SECOND", default=500.0)
AGENT_FRAME_BURST = env.float("AGENT_FRAME_BURST", default=2000.0)
# Seconds a join token works when its creator gives no expiry (a day).
JOIN_TOKEN_TTL = env.float("JOIN_TOKEN_TTL", default=86400.0)
# --- Slurm pools (README, "Slurm"): the cluster's slurm.conf (empty: Slurm's default), the
# directory shared with the nodes where pods write their output (empty: var/slurm-output),
# the prefix of Fairway's job names, and how long one Slurm command may take.
SLURM_CONF = env.str("SLURM_CONF", default="")
SLURM_OUTPUT_DIR = env.str("SLURM_OUTPUT_DIR", default="")
SLURM_JOB_PREFIX = env.str("SLURM_JOB_PREFIX", default="fairway")
SLURM_COMMAND_TIMEOUT = env.float("SLURM_COMMAND_TIMEOUT", default=20.0)
SLURM_SUBMIT_GRACE = env.float("SLURM_SUBMIT_GRACE", default=30.0)
# --- metrics, sign-in attempts, request bodies (the security block, appended) -------------
# Request bodies are JSON only; one nested too deeply to handle is a 400 (api.parsers).
REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"] = ["api.parsers.JSONParser"]
# /metrics names every department and project: system admins read it (session or API
# token), and so does a scraper sending this token as `Authorization: Bearer <token>`
# (empty: no scrape token; api.metrics).
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
# Failed sign-ins (API Basic auth, console and admin login) allowed per username and per
# client address in each window of SIGN_IN_FAILURE_WINDOW seconds; past either limit the
# answer is 429 with Retry-After until the window ends (scheduler_core.sign_in_attempts).
SIGN_IN_FAILURES_PER_USERNAME = env.int("SIGN_IN_FAILURES_PER_USERNAME", default=10)
SIGN_IN_FAILURES_PER_ADDRESS = env.int("SIGN_IN_FAILURES_PER_ADDRESS", default=50)
SIGN_IN_FAILURE_WINDOW = env.float("SIGN_IN_FAILURE_WINDOW", default=900.0)

# --- surviving broker outages
# The worker survives a Redis outage of any length and resumes by itself: it retries the
# broker forever, and holds no unacknowledged task to restore when the connection drops
# (acks-late made kombu's restore_unacked crash the worker while the long scheduling loop
# ran). Acks-late buys nothing here: the cycle task is idempotent and coalesced, the beat
# re-sends cycles, and what-if runs lost with a worker are failed by
# fail_stale_simulations_task.
CELERY_TASK_ACKS_LATE = False
CELERY_TASK_REJECT_ON_WORKER_LOST = False
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None  # forever
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "socket_connect_timeout": 2,
    "socket_timeout": 5,
    "retry_on_timeout": True,
    "health_check_interval": 10,
}
# A cycle request, an event push or the rate limit must fail at once when Redis is gone
# (scheduler_core.outages), not hang a request.
if REDIS_URL:
    CACHES["default"]["OPTIONS"] = {"socket_connect_timeout": 2, "socket_timeout": 2}
# Console pages and the admin answer a plain 503 during an outage (api.outages).
MIDDLEWARE.insert(MIDDLEWARE.index("django.middleware.common.CommonMiddleware") + 1,
                  "api.outages.OutageMiddleware")  # fmt: skip
# Web processes `manage.py run` starts on its port (a socket each, SO_REUSEPORT); 0 means
# min(4, cores + 1).
WEB_CONCURRENCY = env.int("WEB_CONCURRENCY", default=0)
# Seconds each request thread of a web process keeps its database connection (its
# DB_CONN_MAX_AGE; config/http_handler.py): a connection per request costs more than many
# small queries, a PostgreSQL backend process each.
WEB_DB_CONN_MAX_AGE = env.int("WEB_DB_CONN_MAX_AGE", default=60)
# The same for the worker that `manage.py run` starts: it keeps its connection from one
# task to the next (a cycle, a tick, a report's follow-up are many small tasks). Celery's
# Django fixup would close it after every task; CELERY_DB_REUSE_MAX lifts that, and
# config/celery.py closes it when Django's rules say (age, errors), as a request does.
WORKER_DB_CONN_MAX_AGE = env.int("WORKER_DB_CONN_MAX_AGE", default=60)
# Objects a worker allocates (net) before the garbage collector looks at the youngest
# ones (Python's default: 700; config/celery.py). The large-scale load's cycles (1,000
# admissions and 1,000 completions, a cycle run in-process five times each way) spent
# 36-42 ms in the collector at 700 and 10-24 ms at 20,000, and took 495-698 ms against
# 436-603 ms.
WORKER_GC_THRESHOLD = env.int("WORKER_GC_THRESHOLD", default=20_000)
CELERY_DB_REUSE_MAX = 2**31
