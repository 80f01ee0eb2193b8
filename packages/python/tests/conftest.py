"""A real ``handoff serve`` for the tests, and both CLIs to run against it.

The server runs from the checkout's TypeScript sources, as the Node tests' server-process.ts
starts it, on a free port with a temporary data folder: on PGlite, or on a fresh PostgreSQL
database when TEST_DATABASE_URL is set (as the project's CI sets it).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

PACKAGE = Path(__file__).resolve().parents[1]
ROOT = PACKAGE.parents[1]
SOURCE = PACKAGE / "src"
sys.path.insert(0, str(SOURCE))

NODE_CLI = ["node", "--conditions=source", "--import", "tsx", "src/cli.ts"]
ADMIN_TOKEN = "python-tests-admin-token-0123456789"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _fresh_postgres(url: str) -> tuple[str, str]:
    """A new database on the server of ``url``: (its URL, its name), made through node's pg."""
    name = f"handoff_py_{secrets.token_hex(4)}"
    script = (
        "const {default: pg} = await import('pg');"
        "const c = new pg.Client(process.argv[1]); await c.connect();"
        "await c.query(`CREATE DATABASE ${process.argv[2]}`); await c.end();"
    )
    subprocess.run(
        ["node", "--input-type=module", "-e", script, url, name], cwd=ROOT, check=True, timeout=60
    )
    base = url.rsplit("/", 1)[0]
    return f"{base}/{name}", name


def _drop_postgres(url: str, name: str) -> None:
    script = (
        "const {default: pg} = await import('pg');"
        "const c = new pg.Client(process.argv[1]); await c.connect();"
        "await c.query(`DROP DATABASE IF EXISTS ${process.argv[2]} WITH (FORCE)`); await c.end();"
    )
    subprocess.run(["node", "--input-type=module", "-e", script, url, name], cwd=ROOT, timeout=60)


@dataclass
class Server:
    base_url: str
    data_dir: Path

    def new_account(self) -> dict[str, str]:
        """An account (team plan) and the environment a client of it runs in."""
        email = f"py-{secrets.token_hex(4)}@example.com"
        answer = httpx.post(
            f"{self.base_url}/v1/admin/accounts",
            headers={"authorization": f"Bearer {ADMIN_TOKEN}"},
            json={"email": email, "plan": "team"},
            timeout=60,
        )
        answer.raise_for_status()
        return {"HANDOFF_URL": self.base_url, "HANDOFF_API_KEY": answer.json()["api_key"]["api_key"]}

    def blobs_of_size(self, size: int) -> list[Path]:
        return [path for path in (self.data_dir / "blobs").rglob("*") if path.is_file() and path.stat().st_size == size]


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    port = free_port()
    data_dir = Path(tempfile.mkdtemp(prefix="handoff-py-server-"))
    env = {
        **os.environ,
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "PUBLIC_BASE_URL": f"http://127.0.0.1:{port}",
        "DATA_DIR": str(data_dir),
        "ADMIN_TOKEN": ADMIN_TOKEN,
    }
    database: tuple[str, str] | None = None
    admin_url = os.environ.get("TEST_DATABASE_URL")
    if admin_url:
        database = _fresh_postgres(admin_url)
        env["DATABASE_URL"] = database[0]
    log = open(data_dir / "server.log", "wb")
    process = subprocess.Popen([*NODE_CLI, "serve"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"handoff serve exited: {(data_dir / 'server.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{base_url}/readyz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("handoff serve was not ready in time")
            time.sleep(0.2)
        yield Server(base_url, data_dir)
    finally:
        process.kill()
        process.wait()
        log.close()
        if database is not None and admin_url:
            _drop_postgres(admin_url, database[1])
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def account(server: Server) -> dict[str, str]:
    return server.new_account()


@dataclass
class Run:
    status: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def _clean_env(env: dict[str, str]) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if k not in ("HANDOFF_URL", "HANDOFF_API_KEY")}
    return {**inherited, **env}


def run_python(args: list[str], env: dict[str, str], cwd: Path | None = None, timeout: float = 300) -> Run:
    """``python3 -m handoff ARGS`` from the checkout, as decisions 5.7 runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "handoff", *args],
        cwd=cwd or ROOT,
        env={**_clean_env(env), "PYTHONPATH": str(SOURCE)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Run(done.returncode, done.stdout, done.stderr)


def run_node(args: list[str], env: dict[str, str], timeout: float = 300) -> Run:
    """The Node CLI's ``handoff ARGS``."""
    done = subprocess.run(
        [*NODE_CLI, *args], cwd=ROOT, env=_clean_env(env), capture_output=True, text=True, timeout=timeout
    )
    return Run(done.returncode, done.stdout, done.stderr)


class PythonListener:
    """``python3 -m handoff listen --identity FILE --out DIR`` running in the background."""

    def __init__(self, identity: Path, out: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "handoff", "listen", "--identity", str(identity), "--out", str(out)],
            env={**_clean_env(env), "PYTHONPATH": str(SOURCE)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def stop(self) -> Run:
        """SIGTERM, as a user stops it; its exit code and all it printed."""
        self.process.send_signal(signal.SIGTERM)
        stdout, stderr = self.process.communicate(timeout=60)
        return Run(self.process.returncode, stdout, stderr)


def wait_until(ready: Callable[[], bool], seconds: float, interval: float = 0.1) -> bool:
    """Polls ``ready`` until it holds or ``seconds`` pass; whether it held."""
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


def new_slug(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


def files_under(folder: Path) -> list[str]:
    if not folder.exists():
        return []
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))
