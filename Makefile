# todoweb — `make run` starts the app with a demo agent; `make test` runs every test.
# Both create .venv on first use: `make run` installs what the server needs
# (requirements.txt), `make test` adds the test toolchain (requirements-dev.txt).

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RUN_STAMP := $(VENV)/.installed-run
STAMP := $(VENV)/.installed
AGENTS_STAMP := $(VENV)/.agents-installed

.PHONY: help run test test-js test-agents lint typecheck bench clean

help:  ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

run: $(RUN_STAMP) .run/secret-key  ## Start todoweb on http://127.0.0.1:8000 (SQLite, in-memory layer) with demo agents; PORT=, HOST=, DEMO=0
	SECRET_KEY="$${SECRET_KEY:-$$(cat .run/secret-key)}" $(PY) manage.py start

# The local server's own secret key, made once (the repository's key is refused).
.run/secret-key:
	mkdir -p .run
	$(PYTHON) -c "import secrets; print(secrets.token_urlsafe(50))" > $@

PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/todoweb
REDIS_TEST_URL ?= redis://127.0.0.1:6379/0

test: $(STAMP)  ## Run every test: on SQLite (fast paths on, then off), on PostgreSQL + Redis when they answer, then real server processes
	$(VENV)/bin/pytest --ignore=tests/system --ignore=tests/agents $(PYTEST_ARGS)
	@echo "== the same suite with every fast path off (the libraries' public paths) =="
	TODOWEB_FAST_PATHS=0 $(VENV)/bin/pytest --ignore=tests/system --ignore=tests/agents --ignore=tests/browser $(PYTEST_ARGS)
	@if $(PY) scripts/services_up.py $(PG_TEST_URL) $(REDIS_TEST_URL); then \
		echo "== the same suite on PostgreSQL + Redis =="; \
		DATABASE_URL=$(PG_TEST_URL) REDIS_URL=$(REDIS_TEST_URL) $(VENV)/bin/pytest --ignore=tests/system --ignore=tests/agents $(PYTEST_ARGS); \
	elif [ "$$CI" = "true" ]; then \
		echo "CI=true: PostgreSQL and Redis must be reachable for the scale-out pass"; exit 1; \
	else \
		echo "PostgreSQL or Redis not reachable: skipped the scale-out pass (CI runs it)"; \
	fi
	@echo "== real server processes: logs, several processes, faults =="
	PG_TEST_URL=$(PG_TEST_URL) REDIS_TEST_URL=$(REDIS_TEST_URL) $(VENV)/bin/pytest tests/system $(PYTEST_ARGS)

# The shell lists the files: Node 21 and later take a directory argument for a test file.
test-js:  ## Unit tests of the board's pure JavaScript, on Node's own runner (no npm packages)
	node --test tests/js/*.test.mjs

test-agents: $(AGENTS_STAMP)  ## Real agent CLIs (npm) and MCP clients (npm, PyPI) drive a real server, with scripted models
	$(VENV)/bin/pytest tests/agents $(PYTEST_ARGS)

lint: $(STAMP)  ## ruff format --check + ruff check
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

typecheck: $(STAMP)  ## mypy over the pure core (plan/, dialects/, calls/) and the client package
	$(VENV)/bin/mypy

# Each benchmark prints its figures as ratios to a baseline measured in the same run,
# with the load average beside each. The soak runs 1 minute here; the full soak is
# `.venv/bin/python bench/soak.py` (10 minutes, 50 agents, 200 watchers).
bench: $(STAMP)  ## Run the benchmarks under bench/ (about 17 minutes; PostgreSQL + Redis for some)
	$(PY) bench/cost.py
	$(PY) bench/ingest.py
	$(PY) bench/peer.py  # todoweb's side; --peer PATH puts the peer dashboard beside it
	@if command -v valgrind >/dev/null; then $(PY) bench/instructions.py; else echo 'bench/instructions.py skipped: valgrind is not installed'; fi
	$(PY) bench/steering.py
	$(PY) bench/fanout.py
	$(PY) bench/fanout.py --rates 20 --watchers 10000
	$(PY) bench/fanout.py --dashboard --rates 20 --watchers 1000
	$(PY) bench/dashboard.py
	$(PY) bench/soak.py --minutes 1
	@if $(PY) scripts/services_up.py postgres://postgres@127.0.0.1:5432/postgres redis://127.0.0.1:6379/5; then \
		$(PY) bench/fanout.py --topology two && $(PY) bench/scale_out.py; \
	else \
		echo "PostgreSQL or Redis not reachable on 127.0.0.1: skipped fanout --topology two and scale_out"; \
	fi

# The server's packages alone: what `make run` needs.
$(RUN_STAMP): requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $(RUN_STAMP)

# The test and tooling packages on top (pytest, Playwright, mypy, ruff, …).
$(STAMP): requirements.txt requirements-dev.txt $(RUN_STAMP)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $(STAMP)

# The Python MCP clients and agent frameworks of tests/agents, only for test-agents.
# openai-agents asks for websockets<17 (for parts the tests do not use) and the
# server needs 17: it goes in without its dependencies (requirements-agents.txt has them).
$(AGENTS_STAMP): requirements-agents.txt $(STAMP)
	$(VENV)/bin/pip install --quiet -r requirements-agents.txt
	$(VENV)/bin/pip install --quiet --no-deps openai-agents==0.24.0
	touch $(AGENTS_STAMP)

clean:  ## Remove the virtualenv and local databases
	rm -rf $(VENV) db.sqlite3* .test-db.sqlite3*
