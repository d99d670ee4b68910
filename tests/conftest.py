"""Shared fixtures: the cast (alice owns things, bob must see none of them) and a live daphne server.

The live server is a real daphne subprocess on a free port, sharing the test database (a file for
SQLite, the `test_…` database on PostgreSQL), so tests can create objects through the ORM and then
drive the server over real HTTP and websockets. It serves the embedded local API too, at
`<url>/local/v1`, with the fixed test key below.
"""

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from playground import devserver
from playground.devserver import free_port
from playground.devserver import stop as stop_server
from tests.fakeprovider.server import FakeProvider


def _flush_by_delete() -> None:
    """A transactional test ends with a flush of every table. On PostgreSQL Django TRUNCATEs them (0.2 s: each
    table gets new files, under a lock that waits for the live server's connections); DELETE of tables that hold a
    few rows each, in one transaction whose foreign-key checks are deferred to its end, takes 0.01 s. Sequences are
    not reset either way."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences:
            return truncate(self, style, tables, reset_sequences=True, allow_cascade=allow_cascade)
        return [f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};" for table in tables]

    DatabaseOperations.sql_flush = sql_flush


KEPT_BY_FLUSH = {"django_content_type", "auth_permission"}


def _flush_keeps_the_schemas_rows() -> None:
    """Django's flush then emits post_migrate, which makes every content type and permission again: 0.2 s of a
    transactional test's 0.23 s teardown on PostgreSQL. They are the schema's rows, which no test changes: the flush
    keeps them and skips the signal (the playground has no post_migrate receiver of its own)."""
    from django.core.management.commands import flush

    def sql_flush(style, connection, reset_sequences=True, allow_cascade=False):
        tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
        kept = [table for table in tables if table not in KEPT_BY_FLUSH]
        return connection.ops.sql_flush(style, kept, reset_sequences=reset_sequences, allow_cascade=allow_cascade)

    flush.sql_flush = sql_flush
    flush.emit_post_migrate_signal = lambda *args, **kwargs: None


_flush_keeps_the_schemas_rows()
if "postgresql" in settings.DATABASES["default"]["ENGINE"]:
    _flush_by_delete()

# The test process imports playground.asgi before its test database exists; live servers check at boot.
os.environ.setdefault("PLAYGROUND_BOOT_CHECKS", "off")

LOCAL_API_TEST_KEY = "sk-local-test-0123456789abcdef"

# The CI lane this run is in, as .ci/run names it: "postgresql" (PostgreSQL + Redis) or "sqlite" (SQLite + in-memory
# layer, then LOCAL_API=off). The two lanes run the same tests side by side; a few of the heaviest ones do part of
# their work on one lane only, or less of it on the lane where their database does not matter (each says which and
# why). Unset (`make test` by hand, `make test-fast`), every test does all of it.
CI_LANE = os.environ.get("PLAYGROUND_CI_LANE", "")


def lane_size(full: int, *, sqlite_lane: int) -> int:
    """`full`, or `sqlite_lane` (smaller, never nothing) in CI's SQLite lane."""
    assert 0 < sqlite_lane <= full
    return sqlite_lane if CI_LANE == "sqlite" else full


# With LOCAL_API=off (`make test-no-local`) the local API's own tests are not collected (they import its models),
# and tests marked needs_local_api, which use it as their upstream, are skipped.
collect_ignore = [] if settings.LOCAL_API else ["localapi", "connections/test_local_keys.py"]
PASSWORD = "correct-horse-battery-staple"


def database_url() -> str:
    """The URL of the test database as pytest-django created it."""
    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    user = db.get("USER") or ""
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


@dataclass
class LiveServer:
    url: str
    port: int
    process: subprocess.Popen
    api_key: str = LOCAL_API_TEST_KEY

    @property
    def api_url(self) -> str:
        return f"{self.url}/local/v1"

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://")


def server_env(port: int, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "PORT": str(port),
        "LOCAL_API_BASE_URL": f"http://127.0.0.1:{port}/local/v1",
        "LOCAL_API_KEYS": LOCAL_API_TEST_KEY,
        "LOCAL_API_TOKEN_RATE": os.environ.get("LOCAL_API_TOKEN_RATE", "200"),
        "PLAYGROUND_ALLOWED_UPSTREAM_HOSTS": "127.0.0.1,localhost",
        "PLAYGROUND_ENCRYPTION_KEYS": ",".join(settings.ENCRYPTION_KEYS),
        "SECRET_KEY": settings.SECRET_KEY,
        "PLAYGROUND_DATA_DIR": str(settings.DATA_DIR),
        "PYTHONUNBUFFERED": "1",
        "PLAYGROUND_BOOT_CHECKS": "on",
        # A stopped test server drains (lib/drain.py) for at most this long, not production's 60 s.
        "PLAYGROUND_DRAIN_SECONDS": "5",
    }
    # Never inherited from a developer's shell: the server must keep Django's async safety checks.
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    env.update(extra)
    return env


def start_server(port: int, log_path: Path, **extra: str) -> subprocess.Popen:
    return devserver.start_daphne(port, server_env(port, **extra), log=log_path)


@pytest.fixture(scope="session")
def live_server(django_db_setup, django_db_blocker, tmp_path_factory):
    """One daphne process for the whole session, on a free port, sharing the test database."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("daphne") / "server.log"
    # Its batch tracker is kept asleep: sharing the test database, it would poll the batches other tests make, and
    # their fake providers count every request (tests of the tracker call `tracker.track_once` themselves).
    # Its local batches pause 50 ms between requests, so that a cancel sent just after a batch is created lands
    # while requests are left (80 long answers took under half a second on a quiet machine).
    # Nor does it take up evaluation runs (evaluate/resume.py): the runs tests leave resumable are theirs to resume.
    process = start_server(
        port,
        log_path,
        PLAYGROUND_BATCH_TRACK_SECONDS="86400",
        LOCAL_API_BATCH_DELAY="0.05",
        PLAYGROUND_RESUME_SECONDS="0",
    )
    settings.LOCAL_API_BASE_URL = f"http://127.0.0.1:{port}/local/v1"
    settings.LOCAL_API_KEYS = [LOCAL_API_TEST_KEY]
    settings.ALLOWED_UPSTREAM_HOSTS = ["127.0.0.1", "localhost"]
    server = LiveServer(url=f"http://127.0.0.1:{port}", port=port, process=process)
    yield server
    stop_server(process)
    if os.environ.get("SHOW_SERVER_LOG"):
        print(log_path.read_text(errors="replace"))


@pytest.fixture(autouse=True)
def seeded_catalog(request, django_db_blocker):
    """Every test with a database sees the seeded model catalog, as `make run` does.

    Seeded committed, before the test's own transaction: a test that rolls back then finds it already there (one
    read instead of 28 inserts, 80 ms a test on PostgreSQL), and only the flush that ends a transactional test
    makes the next test seed it again."""
    uses_db = request.node.get_closest_marker("django_db") or {"db", "transactional_db", "live_server"} & set(
        request.fixturenames
    )
    if uses_db:
        request.getfixturevalue("django_db_setup")
        with django_db_blocker.unblock():
            _seed_catalog()
        request.getfixturevalue("_django_db_helper")
        _seed_catalog()  # when the test's transaction had begun before (another autouse fixture asked for it)


def _seed_catalog() -> None:
    call_command("seed_catalog", verbosity=0)  # one read when nothing is missing


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user("alice", "alice@example.com", PASSWORD)


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user("bob", "bob@example.com", PASSWORD)


@pytest.fixture
def carol(django_user_model):
    """A third user, in no team of alice's."""
    return django_user_model.objects.create_user("carol", "carol@example.com", PASSWORD)


@pytest.fixture
def team(alice, bob):
    """Acme: alice owns it, bob is a member (tests/teams has its own, with the catalog seeded)."""
    from playground.teams.models import MEMBER, OWNER, Membership, Team

    team = Team.objects.create(name="Acme")
    Membership.objects.create(team=team, user=alice, role=OWNER)
    Membership.objects.create(team=team, user=bob, role=MEMBER)
    return team


def client_of(user) -> Client:
    """A Django test client signed in as `user` (for tests with more than one user at a time)."""
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def bob_client(client, bob):
    client.force_login(bob)
    return client


@pytest.fixture
def catalog(db):
    _seed_catalog()  # seeded already by seeded_catalog: a test names it when it relies on the catalog


@pytest.fixture
def http_for(live_server):
    """httpx clients logged in on the live server, with the CSRF header set (the views call the upstream with
    async_to_sync, which a browser test's event loop in this thread would forbid in-process)."""
    opened = []

    def make(user) -> httpx.Client:
        client = Client()
        client.force_login(user)
        http = httpx.Client(
            base_url=live_server.url, cookies={"sessionid": client.cookies["sessionid"].value}, timeout=60
        )
        # Any page sets the CSRF cookie (base.html renders the token for htmx).
        http.get("/connections/")
        http.headers["X-CSRFToken"] = http.cookies["csrftoken"]
        opened.append(http)
        return http

    yield make
    for http in opened:
        http.close()


@pytest.fixture
def alice_http(http_for, alice):
    return http_for(alice)


@pytest.fixture(autouse=True)
def _live_server_helper(request):
    """Replaces pytest-django's helper of the same name, which expects its own live_server object.

    A test that uses our live_server still gets the transactional database the daphne subprocess can see.
    """
    if "live_server" in request.fixturenames:
        request.getfixturevalue("transactional_db")
    yield


# Fixtures that start another process (daphne, redis-server, moto, Chromium): a test that uses one, even through
# another fixture, is marked `spawns`, and `make test-fast` leaves it out. A test that starts one in its own body
# carries the marker itself.
SPAWNING_FIXTURES = {"live_server", "second_server", "https_server", "servers", "own_redis", "bucket", "chromium"}


@pytest.fixture(scope="session", autouse=True)
def _no_process_in_fast_tests():
    """Under `make test-fast`, a test that starts a process without the `spawns` marker fails and says so.

    A fixture, not a hook: it runs where the tests run (in each pytest-xdist worker), after the workers started."""
    if os.environ.get("PLAYGROUND_TEST_FAST") != "on":
        yield
        return

    def refuse(self, args, *rest, **kwargs):
        raise RuntimeError(f"a test of `make test-fast` started {args!r}: mark it spawns (tests/conftest.py)")

    real = subprocess.Popen._execute_child
    subprocess.Popen._execute_child = refuse
    yield
    subprocess.Popen._execute_child = real


def pytest_collection_modifyitems(config, items):
    """Browser tests run last: sync Playwright keeps an event loop running in the main thread for the rest of the
    session, which async tests and async_to_sync cannot share."""
    without_local_api = pytest.mark.skip(reason="needs the local API (LOCAL_API=off)")
    for item in items:
        if "browser" in item.path.parts:
            item.add_marker(pytest.mark.browser)
        if SPAWNING_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spawns)
        if not settings.LOCAL_API and item.get_closest_marker("needs_local_api"):
            item.add_marker(without_local_api)
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


@pytest.fixture(autouse=True)
def fresh_slots():
    """Each test starts with no personal connection's slot taken, as it starts with no lease row: a slot a test
    left taken (a ticket it never ended) would otherwise count against a later test's connection of the same pk."""
    from playground.connections import slots

    slots.forget()
    yield
    slots.forget()


@pytest.fixture(autouse=True)
def fresh_channel_layer():
    """Each test (with its own event loop) gets its own channel layer: a Redis layer keeps per-loop receive state
    that a later loop must not inherit."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture(scope="session")
def fake_openai_server():
    server = FakeProvider().start()
    yield server
    server.stop()


@pytest.fixture
def fake_openai(fake_openai_server):
    """The independent OpenAI-compatible fake (tests/fakeprovider), its switches and request log reset."""
    fake_openai_server.reset()
    yield fake_openai_server
    fake_openai_server.reset()


@pytest.fixture(autouse=True)
def fresh_throttles():
    """Failed logins and sign-ups of earlier tests (and runs, with a Redis cache) do not block this one."""
    from playground.accounts import throttle

    for action in ("login", "signup"):
        for username in ("alice", "bob", "carol"):
            throttle.forget(action, ip="127.0.0.1", username=username)
    yield
