# Two commands for a fresh machine with Python 3.11:
#   make run    set up .venv with what huiyi needs to run, and index this machine's agent logs
#               (a bundled demo when there are none)
#   make test   add the development tools, then ruff, mypy and the whole test suite
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run test lint bench clean postgresql

$(RUN_STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH (or: make PYTHON=python3 ...)"; exit 1; }
	@echo "==> creating $(VENV) and installing huiyi with what it needs to run (a minute or two on a fresh machine)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --progress-bar on -e .
	@touch $@

$(DEV_STAMP): $(RUN_STAMP) pyproject.toml
	@echo "==> installing the development tools (pytest, mypy, ruff, playwright, uv, the eval baseline)"
	$(BIN)/python -m pip install --progress-bar on -e '.[dev]'
	@touch $@

run: $(RUN_STAMP)
	@echo "==> indexing this machine's agent logs"
	$(BIN)/huiyi index

lint: $(DEV_STAMP)
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

bench: $(DEV_STAMP)
	$(BIN)/python benchmarks/bench_index.py
	$(BIN)/python benchmarks/bench_search.py
	$(BIN)/python benchmarks/bench_startup.py
	$(BIN)/python benchmarks/bench_hooks.py
	$(BIN)/python benchmarks/bench_redact.py
	$(BIN)/python benchmarks/bench_config.py
	$(BIN)/python benchmarks/bench_web.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
