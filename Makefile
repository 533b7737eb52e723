# `make demo` and `make test` work on a fresh machine: they find a Python 3.12+,
# create .venv and install the pinned dependencies from pyproject.toml.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PG_URL ?= postgres://root@127.0.0.1:5432/hammerweb
MYSQL_URL ?= mysql://root@127.0.0.1:3306/hammerweb
PGBOUNCER_URL ?= postgres://root@127.0.0.1:6432/hammerweb
PYTEST_ARGS ?=

.PHONY: venv test test-sqlite test-postgres test-mysql test-pgbouncer demo lint clean docs

venv: $(STAMP)

$(STAMP): pyproject.toml setup.py
	scripts/system-deps
	test -x $(PY) || "$$(scripts/find-python)" -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e . --group dev --group docs
	touch $(STAMP)

# The whole suite once per database, then a selection through PgBouncer.
test: test-sqlite test-postgres test-mysql test-pgbouncer

test-sqlite: $(STAMP)
	env -u DATABASE_URL $(PY) -m pytest $(PYTEST_ARGS)

test-postgres: $(STAMP)
	DATABASE_URL=$(PG_URL) $(PY) -m pytest $(PYTEST_ARGS)

test-mysql: $(STAMP)
	DATABASE_URL=$(MYSQL_URL) $(PY) -m pytest $(PYTEST_ARGS)

# Through PgBouncer in transaction mode (scripts/start-pgbouncer), with the default settings:
# the worker, the enqueue paths, the dashboard, the idle pickup and the chaos test (tests/
# pgbouncer restarts the pooler, never the server). A selection: the suite ran above.
PGBOUNCER_TESTS := tests/pgbouncer tests/workers/runworker/test_runworker.py \
	tests/workers/runworker/test_pickup.py tests/queues/test_tasks_backend.py \
	tests/queues/store/test_insert_jobs.py tests/queues/dashboard/views/test_pages.py \
	tests/queues/dashboard/views/test_actions.py tests/queues/dashboard/live
test-pgbouncer: $(STAMP)
	scripts/start-pgbouncer
	DATABASE_URL=$(PGBOUNCER_URL) $(PY) -m pytest -m "not pgrestart" $(PYTEST_ARGS) $(PGBOUNCER_TESTS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) manage.py makemigrations --check --dry-run

# HAMMERWEB_DEMO=1 installs the demo app (sample handlers, `manage.py demo`); the worker that
# `manage.py demo` starts inherits it. The demo brings its own secret key (the project has no
# built-in one) and debug mode (runserver then serves the static files).
DEMO_ENV := HAMMERWEB_DEMO=1 DJANGO_DEBUG=1 DJANGO_SECRET_KEY=$${DJANGO_SECRET_KEY:-demo-only-insecure-key}
demo: $(STAMP)
	$(PY) manage.py migrate --noinput
	$(DEMO_ENV) $(PY) manage.py demo

# The manual (docs/): warnings, broken links and unresolved references fail the build.
docs: $(STAMP)
	$(PY) -m sphinx -W --keep-going -n -q -b html docs docs/_build/html

clean:
	rm -rf $(VENV) var/*.sqlite3*
