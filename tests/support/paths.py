"""Where the data tests use in place lives: the checkout, the fixtures, and `../shared/` (skipped when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# $DEVLANE_SHARED where the checkout is not beside it (the mutation tests run a copy under mutants/)
SHARED = Path(os.environ.get("DEVLANE_SHARED") or ROOT / ".." / "shared").resolve()
DEMO = SHARED / "seeds-data" / "kardinal-demo"
CRDS = SHARED / "crds"
FIXTURES = ROOT / "tests" / "fixtures"
STANDINS = FIXTURES / "kardinal-standins"
EXAMPLE = ROOT / "examples" / "bookshop"
# devlane's composite GitHub action, and every workflow: the examples users copy, and CI's own
ACTION_DIR = ROOT / ".github" / "actions" / "devlane"
WORKFLOWS = tuple(sorted((ROOT / "examples" / "github").glob("*.yml"))
                  + sorted((ROOT / ".github" / "workflows").glob("*.yml")))
KUBE_VERSION = "1.31"
# The built-in catalogue: every plugin directory of plugins/ (shared modules such as _dbseed.py are files).
BUILTINS = tuple(sorted(p.name for p in (ROOT / "plugins").iterdir() if (p / "main.py").is_file()))
# beyond Kardinal's table: queues and document stores
QUEUE_BUILTINS = ("kafka-topic", "mongodb-seed", "nats-stream", "rabbitmq-vhost")

# Kardinal's plugin repos, mapped onto our own stand-ins (same contract, no network).
STANDIN_SOURCES = {
    "github.com/kurtosis-tech/jsdelivr-api-plugin": "jsdelivr-api",
    "github.com/leoporoli/jsdelivr-api-plugin": "jsdelivr-api",
    "github.com/kurtosis-tech/postgres-seed-plugin": "postgres-seed",
    "github.com/leoporoli/postgres-seed-plugin": "postgres-seed",
    "github.com/kurtosis-tech/neondb-plugin": "neon-branch",
    "github.com/kurtosis-tech/redis-sidecar-plugin": "redis-sidecar",
}


def standin_sources() -> dict[str, str]:
    return {name: str(STANDINS / d) for name, d in STANDIN_SOURCES.items()}


def standin_flags() -> list[str]:
    return [f"--plugin-source={n}={p}" for n, p in standin_sources().items()]


def demo_file(name: str) -> Path:
    path = DEMO / name
    if not path.exists():
        pytest.skip(f"Kardinal demo data not available ({path})")
    return path
