# Two commands set everything up on a fresh machine: `make run` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
CHROMIUM := /usr/bin/chromium

.PHONY: run test test-fast test-no-local lint fix venv deps dev-deps migrate browser balancer clean bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.deps: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev-deps: requirements.txt requirements-dev.txt $(VENV)/.deps
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

deps: $(VENV)/.deps
dev-deps: $(VENV)/.dev-deps

migrate: deps
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py seed_catalog

run: migrate
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	@echo "The playground is at http://127.0.0.1:$(PORT)  (Ctrl+C to stop)"
	PORT=$(PORT) $(BIN)/daphne -e tcp:$(PORT):interface=127.0.0.1:backlog=1024 playground.asgi:application

# Browser tests need Debian's Chromium: install it when missing and we are root; otherwise they skip loudly
# (and fail under CI=true).
browser:
	@if [ ! -x $(CHROMIUM) ] && [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
		echo "Installing Chromium for the browser tests…"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

# The rolling-restart test puts Debian's HAProxy in front of two daphne processes (deploy/haproxy.cfg): install it
# when missing and we are root; otherwise that test skips loudly (and fails under CI=true).
balancer:
	@if ! command -v haproxy >/dev/null && [ ! -x /usr/sbin/haproxy ] && [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
		echo "Installing HAProxy for the rolling-restart test…"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; \
	fi

lint: dev-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

fix: dev-deps
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

test: dev-deps browser balancer
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The tests to run often (under two minutes), in two worker processes: no browser test, no test that starts another
# process (daphne, redis-server, a subprocess; marked `spawns` in tests/conftest.py) and none marked slow.
# `make test` still runs everything.
FAST_WORKERS ?= 2
test-fast: dev-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	PLAYGROUND_TEST_FAST=on $(BIN)/python -m pytest -n $(FAST_WORKERS) -m "not browser and not spawns and not slow" \
		--ignore=tests/browser $(PYTEST_ARGS)

# The suite with the local API left out (LOCAL_API=off): its own tests are not collected and the tests that use it
# as their upstream (marked needs_local_api) are skipped; everything else must pass without it.
test-no-local: dev-deps browser balancer
	LOCAL_API=off $(BIN)/python -m pytest $(PYTEST_ARGS)

bench: dev-deps
	@for script in bench/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) staticfiles var db.sqlite3
