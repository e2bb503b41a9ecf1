# todoweb — `make run` starts the app with a demo agent; `make test` runs every test.
# Both create .venv and install the pinned requirements on first use.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: help run test lint bench clean

help:  ## List the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

run: $(STAMP) .run/secret-key  ## Start todoweb on http://127.0.0.1:8000 (SQLite, in-memory layer) with a demo agent
	SECRET_KEY="$${SECRET_KEY:-$$(cat .run/secret-key)}" $(PY) manage.py start

# The local server's own secret key, made once (the repository's key is refused).
.run/secret-key:
	mkdir -p .run
	$(PYTHON) -c "import secrets; print(secrets.token_urlsafe(50))" > $@

PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/todoweb
REDIS_TEST_URL ?= redis://127.0.0.1:6379/0

test: $(STAMP)  ## Run every test: on SQLite, on PostgreSQL + Redis when they answer, then real server processes
	$(VENV)/bin/pytest --ignore=tests/system $(PYTEST_ARGS)
	@if $(PY) scripts/services_up.py $(PG_TEST_URL) $(REDIS_TEST_URL); then \
		echo "== the same suite on PostgreSQL + Redis =="; \
		DATABASE_URL=$(PG_TEST_URL) REDIS_URL=$(REDIS_TEST_URL) $(VENV)/bin/pytest --ignore=tests/system $(PYTEST_ARGS); \
	elif [ "$$CI" = "true" ]; then \
		echo "CI=true: PostgreSQL and Redis must be reachable for the scale-out pass"; exit 1; \
	else \
		echo "PostgreSQL or Redis not reachable: skipped the scale-out pass (CI runs it)"; \
	fi
	@echo "== real server processes: logs, several processes, faults =="
	PG_TEST_URL=$(PG_TEST_URL) REDIS_TEST_URL=$(REDIS_TEST_URL) $(VENV)/bin/pytest tests/system $(PYTEST_ARGS)

lint: $(STAMP)  ## ruff format --check + ruff check
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

bench: $(STAMP)  ## Run the benchmarks under bench/
	$(PY) bench/write_path.py
	$(PY) bench/live_update.py

$(STAMP): requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

clean:  ## Remove the virtualenv and local databases
	rm -rf $(VENV) db.sqlite3* .test-db.sqlite3*
