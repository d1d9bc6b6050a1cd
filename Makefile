VENV ?= .venv
PY = $(VENV)/bin/python

.PHONY: install test lint serve bench schema openapi dist

$(VENV):
	python3 -m venv $(VENV)

install: $(VENV)
	$(PY) -m pip install -e '.[test]'

test: install
	$(PY) -m pytest

lint:
	$(PY) -m ruff check tornchat storage scheduler tests bench
	$(PY) -m ruff format --check tornchat storage scheduler tests bench

serve: install
	$(VENV)/bin/tornchat serve

bench: install
	$(PY) bench/requests_overhead.py

schema:
	$(PY) -m storage.db.dump_schema --write

openapi:
	$(PY) -m tornchat.openapi --write

# dist/tornchat-<version>-linux-<arch> (one file, no Python needed) and dist/tornchat-<version>.pyz (pex).
dist:
	bash packaging/build.sh
