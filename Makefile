# PeerBoard: two commands.
#   make run   set up (first time) and open the dashboard on the bundled sample study
#   make test  set up (first time) and run the whole test suite
# Everything lands in .venv/ beside this file; nothing is installed system-wide except
# Debian's chromium for the browser test (via apt-get, as root or with sudo).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test setup setup-dev bench clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "PeerBoard needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml requirements.lock
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)

test: setup
	$(BIN)/python -m pytest

run: setup
	$(BIN)/peercore rank sample_data/judgments.csv --method bt --bootstrap 1000

bench: setup
	$(BIN)/python benchmarks/ranking.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis test-output
