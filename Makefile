# Two commands for a fresh machine with Python 3.11:
#   make run    set up .venv and index this machine's agent logs (a bundled demo when there are none)
#   make test   ruff, mypy and the whole test suite
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean postgresql

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH (or: make PYTHON=python3 ...)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/huiyi index

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

# The browser tests drive Debian's chromium (never Playwright's own download); a CJK font
# makes their screenshots legible.
CHROMIUM := /usr/bin/chromium

$(CHROMIUM):
	@command -v apt-get >/dev/null 2>&1 || { echo "the browser tests need Debian's chromium at $(CHROMIUM) (apt-get install chromium)"; exit 1; }
	apt-get install -y chromium fonts-wqy-microhei || { apt-get update && apt-get install -y chromium fonts-wqy-microhei; }

# The PostgreSQL tests start their own throwaway cluster with Debian's server binaries.
INITDB := $(firstword $(wildcard /usr/lib/postgresql/*/bin/initdb))

postgresql:
	@test -n "$(INITDB)" || command -v initdb >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 || { echo "the PostgreSQL tests need Debian's postgresql (apt-get install postgresql)"; exit 1; }; apt-get install -y postgresql || { apt-get update && apt-get install -y postgresql; }; }

test: lint $(CHROMIUM) postgresql
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_index.py
	$(BIN)/python benchmarks/bench_search.py
	$(BIN)/python benchmarks/bench_startup.py
	$(BIN)/python benchmarks/bench_hooks.py
	$(BIN)/python benchmarks/bench_redact.py
	$(BIN)/python benchmarks/bench_config.py
	$(BIN)/python benchmarks/bench_web.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
