# `make up` sets up and starts the embedded system; `make test` sets up and runs every check.
# Set-up is incremental: the virtual environment is rebuilt only when a pyproject or the
# constraints change, the frontend only when its sources are newer than its build.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PIP_VERSION := 26.3
FRONTEND_SRC := $(shell find frontend/src frontend/scripts frontend/index.html frontend/package.json frontend/tsconfig.json frontend/vite.config.ts -type f 2>/dev/null)

.PHONY: up test setup frontend lint typecheck pytest frontend-check docs docs-check flow-tests clean

up: setup frontend
	$(BIN)/flowbroker up

test: setup frontend lint typecheck docs-check frontend-check flow-tests pytest

setup: $(STAMP)

# the C sources are compiled by their package's install (backend/setup.py, esql-parser/setup.py,
# flow-nodes/setup.py):
# an edit rebuilds them
NATIVE_SRC := $(wildcard backend/flowbroker/*/*.c esql-parser/esql/*.c flow-nodes/flowbroker_nodes/*.c)

$(STAMP): constraints.txt backend/pyproject.toml backend/setup.py esql-parser/setup.py flow-nodes/setup.py $(NATIVE_SRC) flow-nodes/pyproject.toml esql-parser/pyproject.toml bench/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check pip==$(PIP_VERSION)
	$(BIN)/python -m pip install -q -c constraints.txt -e ./esql-parser -e ./flow-nodes -e './backend[dev]' -e ./bench
	touch $@

ifneq ($(wildcard frontend/package.json),)
frontend: frontend/dist/index.html

frontend/node_modules/.package-lock.json: frontend/package.json frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund --loglevel=error
	touch $@

frontend/dist/index.html: frontend/node_modules/.package-lock.json $(FRONTEND_SRC)
	cd frontend && npm run build

# check:api fails when src/api/schema.d.ts (or the node specs the unit tests use) no longer
# matches the backend: regenerate with `cd frontend && npm run gen:api` and commit the result.
frontend-check: setup frontend/node_modules/.package-lock.json
	cd frontend && npm run check:api && npm run typecheck && npm run lint && npm run test:unit
else
frontend:
	@echo "frontend: no frontend/package.json yet, nothing to build"
frontend-check:
	@true
endif

lint: setup
	$(BIN)/ruff check backend esql-parser flow-nodes bench tests
	$(BIN)/ruff format --check backend esql-parser flow-nodes bench tests

typecheck: setup
	$(BIN)/mypy

# docs/nodes.md and README.md's node table are generated from the node specs: `make docs` rewrites
# them, `make test` checks them.
docs: setup
	$(BIN)/flowbroker docs nodes --output docs/nodes.md --readme README.md

docs-check: setup
	$(BIN)/flowbroker docs nodes --check --output docs/nodes.md --readme README.md

# The suite runs on PYTEST_WORKERS processes (pytest-xdist); every test already picks its own
# ports, queue names and data directories. Most of the suite waits on the processes it starts
# (queue manager, groups, browser), so four workers keep a 2-core machine busier than two or
# three; work stealing hands the long tests' neighbours to idle workers (tests/platform and
# tests/runtime on a slow 2-core host: 208 s with three workers, 164 s with four stealing).
PYTEST_WORKERS ?= 4

# every example flow's test cases, on one private engine the command starts; JUnit XML for CI
flow-tests: setup
	$(BIN)/flowbroker test examples/flows --junit $(VENV)/flow-tests.xml

pytest: setup
	$(BIN)/pytest -q -rs -p no:cacheprovider -n $(PYTEST_WORKERS) --dist worksteal --durations=15

clean:
	rm -rf $(VENV) frontend/node_modules frontend/dist
