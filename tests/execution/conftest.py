"""A whole Fairway with real agent processes, on a PostgreSQL database of its own (made on
the server of the test run's DATABASE_URL, dropped afterwards) and its own embedded Redis."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from benchmarks.agent_stack import AgentStack

# Short liveness timings, so a lost node is noticed within the test's patience.
TIMINGS = {
    "AGENT_HEARTBEAT_INTERVAL": "1",
    "AGENT_USAGE_INTERVAL": "2",
    "AGENT_UNREACHABLE_AFTER": "4",
    "AGENT_LOST_AFTER": "14",
}


@pytest.fixture(scope="module")
def product_database() -> Iterator[str]:
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        pytest.skip("needs PostgreSQL (DATABASE_URL), as bin/test's second pass gives")
    name = f"fairway_e2e_{uuid.uuid4().hex[:8]}"
    parts = urlsplit(base)
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield urlunsplit(parts._replace(path=f"/{name}"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def make_stack(database: str, var_dir: Path, **kwargs) -> AgentStack:
    env = {"DATABASE_URL": database, "REDIS_URL": "", **TIMINGS}
    return AgentStack(var_dir=var_dir, env=env, **kwargs)


@pytest.fixture(scope="module")
def var_dir() -> Iterator[Path]:
    """Outside pytest's private temporary directory (mode 0700): pods run as `nobody`
    when the tests run as root, and must reach their checkpoint directories."""
    path = Path(tempfile.mkdtemp(prefix="fairway-e2e-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def stack(product_database, var_dir) -> Iterator[AgentStack]:
    """The product with three agents (node-a, node-b, node-c), two fake GPUs each; the
    projects `team` (quota 2 GPUs) and `other` (quota 4)."""
    running = make_stack(product_database, var_dir, projects={"team": 2, "other": 4}).start()
    try:
        for name in ("node-a", "node-b", "node-c"):
            running.start_agent(name, gpus=2)
        yield running
    finally:
        running.stop()
        print(running.product_output()[-3000:])
        for name, agent in running.agents.items():
            print(f"--- agent {name}\n{agent.output[-2000:]}")
