"""Every test runs isolated from the machine: HOME, HUIYI_HOME and every harness home point at
a fresh temporary directory, and no test reads the real ~/.dsh, ~/.claude or ~/.codex.

No test asserts on wall-clock time: a busy machine slows everything down. A linear-time bound is
checked as a ratio (`cost_ratio`), pure speed is measured by `make bench`, and Hypothesis runs
without its per-example deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.pgcluster import Cluster, cluster

# Hypothesis fails an example that runs over 200 ms, and a test whose data is slow to generate:
# wall-clock checks that a busy machine trips. Off for every property test.
settings.register_profile("huiyi", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("huiyi")


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HUIYI_HOME", str(home / ".huiyi"))
    monkeypatch.setenv("DSH_HOME", str(home / ".dsh"))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("HUIYI_WORKSPACE", raising=False)
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    # the deterministic fake keeps tests fast; tests of the real default ask for it by name
    monkeypatch.setenv("HUIYI_EMBEDDER", "fake")
    return home


def _cost_ratio(
    fn: Callable[[str], object],
    make: Callable[[int], str],
    n: int,
    *,
    times: int = 10,
    rounds: int = 3,
) -> float:
    """What one call on a `times`-times longer input costs, over `times` calls on `make(n)`.

    Both sides do the same amount of work if `fn` is linear, so the ratio is about 1; a
    quadratic `fn` makes it about `times`. The two are timed alternately, best of `rounds`, in
    this thread's CPU time (not wall time, which other processes on a busy machine stretch
    unevenly), so the ratio does not move with the load; assert it under 3, far from `times`.
    """
    short, long = make(n), make(n * times)
    best_short = best_long = float("inf")
    for _ in range(rounds):
        start = time.thread_time()
        for _ in range(times):
            fn(short)
        best_short = min(best_short, time.thread_time() - start)
        start = time.thread_time()
        fn(long)
        best_long = min(best_long, time.thread_time() - start)
    return best_long / best_short


@pytest.fixture
def cost_ratio() -> Callable[..., float]:
    """`_cost_ratio` for tests of linear time: assert the ratio stays well under `times`."""
    return _cost_ratio


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """One throwaway PostgreSQL server for the whole session (`tests/pgcluster.py`)."""
    with cluster() as running:
        yield running


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """A fresh, empty database on the session's server."""
    return pg_cluster.new_database()
