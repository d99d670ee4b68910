"""The playground in a daphne subprocess on 127.0.0.1, for the test suite's live server, bench/ and scripts/.

No Django imports: callers pass the whole environment of the server (database URL, keys, rates), and
`manage()` runs manage.py with that same environment, e.g. to migrate a temporary SQLite database first.
"""

import http.client
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sqlite_env(directory: str | Path, database: str = "bench.sqlite3", **extra: str) -> dict[str, str]:
    """This process's environment with a SQLite database and the data directory in `directory`, plus `extra`."""
    return {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{Path(directory) / database}",
        "PLAYGROUND_DATA_DIR": str(directory),
        **extra,
    }


def manage(env: dict[str, str], *args: str, **run: object) -> subprocess.CompletedProcess:
    """`manage.py <args>` with `env`; raises CalledProcessError if it fails. `run` goes to subprocess.run."""
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, **run)


def answers(port: int, path: str, headers: dict[str, str] | None = None) -> bool:
    """Whether the server answers a GET of `path` with any HTTP response at all."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        connection.request("GET", path, headers=headers or {})
        connection.getresponse().read()
        return True
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def start_daphne(
    port: int,
    env: dict[str, str],
    *,
    ready_path: str = "/accounts/login/",
    headers: dict[str, str] | None = None,
    log: str | Path | None = None,
    backlog: int | None = None,
    timeout: float = 30,
) -> subprocess.Popen:
    """daphne serving the playground on 127.0.0.1:`port`, returned once a GET of `ready_path` gets an answer.

    Its output is appended to `log`, or discarded. `backlog` sets the listen backlog (Twisted's default, 50,
    overflows when hundreds of clients connect at once).
    """
    if backlog is None:
        bind = ["-b", "127.0.0.1", "-p", str(port)]
    else:
        bind = ["-e", f"tcp:{port}:interface=127.0.0.1:backlog={backlog}"]
    command = [sys.executable, "-m", "daphne", *bind, "playground.asgi:application"]
    if log is None:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    else:
        with open(log, "ab") as out:
            process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    see = f"; see {log}" if log else ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"daphne exited with {process.returncode}{see}")
        if answers(port, ready_path, headers):
            return process
        time.sleep(0.1)
    stop(process)
    raise RuntimeError(f"daphne did not answer on port {port} within {timeout:g} s{see}")


def stop(*processes: subprocess.Popen, timeout: float = 10) -> None:
    """SIGTERM to each, then SIGKILL to any that has not exited within `timeout` seconds."""
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
