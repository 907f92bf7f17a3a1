PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DATA ?=
SESSIONS ?=

.PHONY: venv test test-fast lint run bench clean

$(BIN)/sessionq: pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(BIN)/sessionq

venv: $(BIN)/sessionq

test: venv
	$(BIN)/ruff check indexer worker tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest

# Everything but the tests that need a Kafka broker (marker ``kafka``): no JVM, no Docker.
test-fast: venv
	$(BIN)/ruff check indexer worker tests bench
	$(BIN)/mypy
	$(BIN)/python -m pytest -m "not kafka and not slow"

lint: venv
	$(BIN)/ruff check indexer worker tests bench
	$(BIN)/mypy

run: venv
	./scripts/run.sh "$(SESSIONS)" "$(DATA)"

bench: venv
	$(BIN)/python bench/bench_store.py

clean:
	rm -rf $(VENV) .sessionq .pytest_cache .mypy_cache .ruff_cache
