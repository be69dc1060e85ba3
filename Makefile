# dprect — two commands do everything on a fresh machine:
#   make demo   set up, then learn a private rectangle from generated data
#   make test   set up, then lint and run the tests
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

export PYSPARK_PYTHON        := $(abspath $(BIN))/python
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN))/python
export SPARK_LOCAL_IP        := 127.0.0.1
export PYTHONHASHSEED        := 0

.PHONY: setup test lint demo bench-core clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (Python 3.11) on PATH"; exit 1; }
	@command -v java >/dev/null 2>&1 || echo "warning: no java on PATH; the Spark engine needs Java 17"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	@touch $(STAMP)

lint: setup
	$(BIN)/ruff check dprect jobs tests benchmarks

test: setup lint
	$(BIN)/python -m pytest

demo: setup
	$(BIN)/python jobs/demo.py

bench-core: setup
	$(BIN)/python benchmarks/core_fit.py

# Evidence shown in docs/results.md: sample complexity beside the planner's predictions,
# and the privacy audit. Both rewrite their JSON and PNG under docs/figures/.
.PHONY: bench-sample audit
bench-sample: setup
	$(BIN)/python benchmarks/sample_complexity.py

audit: setup
	$(BIN)/python benchmarks/privacy_audit.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info demo-output
