"""Session fixtures for the real-client tests: the pinned CLIs, installed once (see install.py).

An install that fails raises InstallError with npm's message: the tests that need the client
fail with it. They are never skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.clients.install import installed


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    return installed("claude")


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    return installed("codex")
