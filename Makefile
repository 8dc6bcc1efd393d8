# chaintape: `make up` runs everything on the embedded default; `make check` runs every test
# (`make test`, the fast suite, then `make test-stack`).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed

.PHONY: up check test test-stack test-spark ui lint bench bench-edge bench-edge-memory bench-oracle bench-wallets bench-ingest bench-freshness clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

# The page's charting library, and the local EVM node and Solidity compiler of the ingest's
# tests, from the committed lockfile.
$(NODE_STAMP): package-lock.json
	command -v npm >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm)
	npm ci --no-audit --no-fund --ignore-scripts
	touch $(NODE_STAMP)

up: $(STAMP) $(NODE_STAMP)
	PORT=$(PORT) $(BIN)/chaintape up

# Headless Chromium and its driver, for the page's browser test.
BROWSER := /usr/bin/chromedriver
$(BROWSER):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver

# Two test processes, each taking whole files (a file's fixtures stay in one process): much of
# the suite waits on servers, nodes and subprocesses, so two run in little more than one's time.
test: $(STAMP) $(NODE_STAMP) $(BROWSER)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2 --dist loadfile --durations=10

# The tests that start the whole stack (`chaintape up`, simulated and following a chain) or a
# two-worker cluster and wait for its refreshes: minutes each, so apart from the fast suite.
test-stack: $(STAMP) $(NODE_STAMP)
	$(BIN)/python -m pytest -m stack -n 2 --dist load --durations=20

# Every test: what continuous integration runs.
check: test test-stack

# The SQL models on Spark in local mode as well (pyspark and a Java runtime: not in `test`).
test-spark: $(STAMP)
	command -v java >/dev/null || (apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless)
	$(BIN)/pip install --quiet -e '.[test,spark]'
	$(BIN)/python -m pytest -m spark

ui: $(STAMP)
	$(BIN)/chaintape ui

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python bench/simulate.py

bench-edge: $(STAMP)
	command -v nginx >/dev/null && command -v wrk >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light wrk)
	$(BIN)/python bench/edge.py

bench-edge-memory: $(STAMP)
	command -v wrk >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk)
	$(BIN)/python bench/edge_memory.py

bench-oracle: $(STAMP)
	command -v wrk >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk)
	$(BIN)/python bench/oracle.py

bench-wallets: $(STAMP)
	command -v wrk >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk)
	$(BIN)/python bench/wallet_profile.py

bench-ingest: $(STAMP) $(NODE_STAMP)
	$(BIN)/python bench/ingest.py

bench-freshness: $(STAMP)
	command -v wrk >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk)
	$(BIN)/python bench/freshness.py

clean:
	rm -rf var node_modules
