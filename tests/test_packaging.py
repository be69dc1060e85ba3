"""Packaging: a core install (numpy + pyarrow) runs ``dprect fit`` on the numpy engine, and
every optional feature used without its extra says which extra to install.

Two ways: the optional modules hidden from a subprocess of this environment (fast), and
``pip install .`` without extras into a fresh virtual environment (slow: about 10 s with
a warm pip cache; PyPI or the cache must hold numpy, pyarrow and setuptools).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from packaging.requirements import Requirement

from dprect.core.extras import EXTRAS

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
#: distribution name → top-level module, for the optional dependencies
MODULE_OF = {"pyspark": "pyspark", "pandas": "pandas", "numba": "numba", "isal": "isal",
             "deltalake": "deltalake",
             "matplotlib": "matplotlib", "pyyaml": "yaml", "scipy": "scipy",
             "grpcio": "grpc", "grpcio-status": "grpc_status",
             "googleapis-common-protos": "google.rpc", "zstandard": "zstandard",
             "scikit-learn": "sklearn"}
HIDDEN = ("pyspark", "py4j", "pandas", "numba", "isal", "deltalake", "matplotlib", "yaml", "scipy",
          "sklearn")
SPARK_MESSAGE = ("dprect: error: the Spark engine needs the 'spark' extra: "
                 "pip install 'dprect[spark]'")
FIT = ["fit", "--input", "data.parquet", "--features", "a,b", "--label", "y",
       "--epsilon", "1", "--delta", "1e-6", "--grid", "0:10:1024", "--seed", "7"]


def _requirements(name: str | None) -> list[Requirement]:
    project = PYPROJECT["project"]
    specs = project["dependencies"] if name is None else project["optional-dependencies"][name]
    return [Requirement(s) for s in specs]


def _own(name: str) -> tuple[set[str], set[str]]:
    """(distributions, extras of dprect itself) an extra lists."""
    dists, extras = set(), set()
    for req in _requirements(name):
        if req.name == "dprect":
            extras |= req.extras
        else:
            dists.add(req.name.lower())
    return dists, extras


def test_core_install_is_numpy_and_pyarrow_with_ranges_not_pins():
    assert {r.name for r in _requirements(None)} == {"numpy", "pyarrow"}
    for name in [None, *PYPROJECT["project"]["optional-dependencies"]]:
        for req in _requirements(name):
            assert all(s.operator not in ("==", "===") for s in req.specifier), req


def test_extras_and_the_runtime_table_agree():
    optional = PYPROJECT["project"]["optional-dependencies"]
    assert set(optional) == {"spark", "connect", "delta", "plot", "jobs", "audit", "sklearn",
                             "all", "dev"}
    assert _own("spark")[0] == {"pyspark", "pandas", "numba", "isal"}
    assert "delta-spark" not in {d for name in optional for d in _own(name)[0]}  # never imported
    assert _own("jobs") == ({"pyyaml"}, {"spark", "delta", "plot"})
    assert _own("connect")[1] == {"spark"}
    assert _own("all") == (set(), {"spark", "connect", "delta", "plot", "jobs", "audit",
                                   "sklearn"})
    assert {"pytest", "hypothesis", "ruff", "mypy"} <= _own("dev")[0]
    for extra, (modules, _) in EXTRAS.items():  # dprect.core.extras names what pyproject has
        assert {MODULE_OF[d] for d in _own(extra)[0]} == set(modules), extra
    pandas = next(r for r in _requirements("spark") if r.name == "pandas")
    assert pandas.specifier.contains("2.2.0") and not pandas.specifier.contains("3.0.0")


def test_this_environment_satisfies_every_range():
    """The ranges hold the versions the Makefile's environment was tested with."""
    for name in [None, *PYPROJECT["project"]["optional-dependencies"]]:
        for req in _requirements(name):
            if req.name == "dprect":
                continue
            try:
                installed = version(req.name)
            except PackageNotFoundError:
                pytest.fail(f"{req.name} ({name or 'core'}) is not installed here")
            assert req.specifier.contains(installed, prereleases=True), (req, installed)


def test_build_settings_that_keep_setuptools_quiet():
    build = PYPROJECT["build-system"]["requires"]
    assert any(Requirement(r).name == "setuptools" and Requirement(r).specifier.contains("77")
               and not Requirement(r).specifier.contains("76") for r in build)
    assert isinstance(PYPROJECT["project"]["license"], str)  # SPDX, not the deprecated table


def test_the_jvm_bin_counts_source_ships_as_package_data():
    """The wheel carries dprect/engines/spark/jvm/BinsAggregator.java (``make setup``
    compiles it; dprect.engines.spark.jvm_bins.SOURCE), at the version the session checks."""
    data = PYPROJECT["tool"]["setuptools"]["package-data"]["dprect.engines.spark"]
    shipped = {f for pattern in data
               for f in (REPO / "dprect" / "engines" / "spark").glob(pattern)}
    source = REPO / "dprect" / "engines" / "spark" / "jvm" / "BinsAggregator.java"
    assert source in shipped
    pytest.importorskip("pyspark")
    from dprect.engines.spark.session import BINS_VERSION

    assert f"public static final int VERSION = {BINS_VERSION};" in source.read_text()


@pytest.fixture()
def tiny_table(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    x = rng.uniform(0.0, 10.0, size=(4000, 2))
    y = ((x[:, 0] > 2) & (x[:, 0] < 8) & (x[:, 1] > 1) & (x[:, 1] < 6)).astype(np.int64)
    pq.write_table(pa.table({"a": x[:, 0], "b": x[:, 1], "y": y}), tmp_path / "data.parquet")
    return tmp_path


def _check_result(path: Path) -> dict:
    result = json.loads(path.read_text())
    assert result["features"] == ["a", "b"] and result["seeded"] is True
    assert not result["empty"]
    for lo, hi in zip(result["lower"], result["upper"], strict=True):
        assert 0.0 <= float(lo) <= float(hi) <= 10.0
    return result


# -- the optional modules hidden from this environment ----------------------------------
_HIDE = textwrap.dedent(f"""
    import sys

    class _Hide:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in {HIDDEN!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    sys.meta_path.insert(0, _Hide())
""")


def _hidden(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _HIDE + textwrap.dedent(code)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def _cli_hidden(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m dprect ARGS`` with the optional modules hidden."""
    return _hidden(f"""
        import runpy
        sys.argv = ["dprect", *{args!r}]
        runpy.run_module("dprect", run_name="__main__", alter_sys=True)
    """, cwd)


def test_without_extras_the_numpy_fit_runs_and_spark_names_its_extra(tiny_table: Path):
    out = _cli_hidden([*FIT, "--output", "hidden.json"], tiny_table)
    assert out.returncode == 0, out.stderr
    hidden = _check_result(tiny_table / "hidden.json")
    full = subprocess.run([sys.executable, "-m", "dprect", *FIT, "--output", "full.json"],
                          cwd=tiny_table, capture_output=True, text=True, timeout=120)
    assert full.returncode == 0, full.stderr
    assert hidden == json.loads((tiny_table / "full.json").read_text())  # same seed, same run

    out = _cli_hidden([*FIT, "--output", "spark.json", "--engine", "spark"], tiny_table)
    assert (out.returncode, out.stderr.strip()) == (2, SPARK_MESSAGE)
    assert not (tiny_table / "spark.json").exists()


def test_without_extras_the_classifier_names_the_sklearn_extra(tmp_path: Path):
    out = _hidden("""
        import dprect
        from dprect.core.extras import MissingExtraError
        try:
            dprect.RectangleClassifier
        except MissingExtraError as exc:
            print(exc.extra, exc)
    """, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("sklearn dprect.RectangleClassifier needs the 'sklearn' "
                                  "extra: pip install 'dprect[sklearn]'")


def test_without_extras_the_ledger_names_the_delta_extra(tiny_table: Path):
    message = ("dprect: error: the budget ledger needs the 'delta' extra: "
               "pip install 'dprect[delta]'")
    out = _cli_hidden(["budget", "init", "--ledger", "ledger"], tiny_table)
    assert (out.returncode, out.stderr.strip()) == (2, message)
    out = _cli_hidden([*FIT, "--output", "r.json", "--ledger", "ledger", "--dataset", "d"],
                      tiny_table)
    assert (out.returncode, out.stderr.strip()) == (2, message)
    assert not (tiny_table / "r.json").exists() and not (tiny_table / "ledger").exists()


def test_without_extras_each_feature_names_its_extra(tmp_path: Path):
    out = _hidden("""
        import json, pkgutil, importlib
        import dprect
        from dprect.core.extras import MissingExtraError

        report = {}
        def expect(extra, call):
            try:
                call()
            except MissingExtraError as exc:
                assert isinstance(exc, ImportError) and isinstance(exc, ValueError)
                report[extra] = str(exc)
            else:
                report[extra] = None

        expect("spark", lambda: importlib.import_module("dprect.engines.spark.engine"))
        from dprect.release import plotting, results_table
        from dprect.core import audit
        res = dprect.fit([[1.0, 2.0]], [1], epsilon=1.0, delta=1e-6, seed=1)
        expect("plot", lambda: plotting.render_png(res))
        expect("delta", lambda: results_table.check_results_table("nowhere"))
        expect("audit", lambda: audit.clopper_pearson(1, 2, 0.05))
        from dprect.app import jobs_support
        expect("jobs", lambda: jobs_support.apply_override({}, "epsilon=1", section="fit"))
        expect("sklearn", lambda: dprect.RectangleClassifier)
        # every module outside the Spark package, the scikit-learn classifier (which,
        # like it, is its extra's own module) and the compiled samplers, block draws,
        # release and quantile tables and cells, H's search and exp_array's stages
        # (numba's own modules, imported only where numba is: randomness.kernels,
        # intervals._bisection_kernel, crmath._kernel) imports without any extra — and
        # without numba the samplers, H's search and exp_array run in Python
        failed = []
        for m in pkgutil.walk_packages(dprect.__path__, prefix="dprect."):
            if m.name.startswith("dprect.engines.spark") or m.name in (
                    "dprect.__main__", "dprect.app.classifier", "dprect.core.random_jit",
                    "dprect.core.block_jit", "dprect.core.release_jit",
                    "dprect.core.quantile_jit", "dprect.core.quantile_cell_jit",
                    "dprect.core.intervals_jit", "dprect.core.exp_jit"):
                continue
            try:
                importlib.import_module(m.name)
            except ImportError as exc:
                failed.append(f"{m.name}: {exc.name}")
        from dprect.core import randomness
        randomness.JIT_AFTER = 0
        src = randomness.RandomSource(seed=3)
        src.discrete_laplace_int(1, 7)
        assert randomness.kernels() is None, "the samplers' kernels loaded without numba"
        from dprect.core import intervals
        assert intervals._bisection_kernel() is None, "H's compiled search loaded without numba"
        assert intervals.mixed_quantile(0.5, 0.13, 0.05) > 0  # the numpy path
        from dprect.core import crmath
        assert crmath._kernel() is None, "exp_array's compiled stages loaded without numba"
        assert crmath.exp_array([0.0] * 64)[0] == 1.0  # the numpy stages
        report["imports"] = failed
        print(json.dumps(report))
    """, tmp_path)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout.strip().splitlines()[-1])
    for extra in ("spark", "plot", "delta", "audit", "jobs", "sklearn"):
        assert report[extra] is not None, extra
        assert report[extra].endswith(f"needs the '{extra}' extra: pip install 'dprect[{extra}]'")
    assert report["imports"] == []


# -- a fresh virtual environment, `pip install .` without extras -------------------------
def _copy_project(dest: Path) -> Path:
    """What a build needs (pyproject, README, the package), without caches or outputs."""
    src = dest / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "dprect", src / "dprect",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return src


def _pip(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check",
                           *args], capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.slow
def test_fresh_venv_core_install(tiny_table: Path, tmp_path_factory: pytest.TempPathFactory):
    where = tmp_path_factory.mktemp("fresh")
    src = _copy_project(where)
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = _pip(venv, "install", "--quiet", str(src))
    if installed.returncode != 0 and re.search(
            r"NewConnectionError|Could not fetch|No matching distribution|"
            r"Temporary failure in name resolution", installed.stderr):
        pytest.skip("PyPI is unreachable and the pip cache cannot serve the core install")
    assert installed.returncode == 0, installed.stderr
    assert "Warning" not in installed.stderr, installed.stderr  # no setuptools warnings
    listed = json.loads(_pip(venv, "list", "--format", "json").stdout)
    names = {p["name"].lower() for p in listed} - {"pip", "setuptools", "wheel"}
    assert names == {"dprect", "numpy", "pyarrow"}, names

    python = venv / "bin" / "python"
    probe = subprocess.run([str(python), "-c", "import pyspark"], capture_output=True,
                           text=True, cwd=where)
    assert probe.returncode != 0 and "No module named 'pyspark'" in probe.stderr

    dprect = str(venv / "bin" / "dprect")
    out = subprocess.run([dprect, *FIT, "--output", "fresh.json"], cwd=tiny_table,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    fresh = _check_result(tiny_table / "fresh.json")
    full = subprocess.run([sys.executable, "-m", "dprect", *FIT, "--output", "full.json"],
                          cwd=tiny_table, capture_output=True, text=True, timeout=120)
    assert full.returncode == 0, full.stderr
    assert fresh == json.loads((tiny_table / "full.json").read_text())

    out = subprocess.run([dprect, *FIT, "--output", "spark.json", "--engine", "spark"],
                         cwd=tiny_table, capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stderr.strip()) == (2, SPARK_MESSAGE)

    # an editable install of the same tree is quiet too (the Makefile's `pip install -e`)
    editable = _pip(venv, "install", "--quiet", "--no-deps", "-e", str(src))
    assert editable.returncode == 0, editable.stderr
    assert "Warning" not in editable.stderr, editable.stderr
