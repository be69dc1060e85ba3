"""Outputs of a fit (no Spark needed): the Delta results table, the PNG, job plumbing."""

from __future__ import annotations

import inspect
import json
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from special_paths import KINDS, special

import dprect
from dprect.app.jobs_support import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_SPARK,
    ConfigError,
    describe_failure,
    load_config,
    run_job,
)
from dprect.core.errors import InputDataError, ParameterError
from dprect.release.plotting import feature_pairs, render_png
from dprect.release.results_table import (
    SCHEMA,
    append_result,
    check_results_table,
    new_run_id,
    read_results,
    result_row,
)
from dprect.release.sinks import read_truth

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def result() -> dprect.FitResult:
    gen = np.random.default_rng(4)
    X = gen.uniform(0, 10, size=(20_000, 3))
    y = ((X > 2) & (X < 7)).all(axis=1).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return dprect.fit(X, y, grid=dprect.Grid(0.0, 10.0, 1024), epsilon=1.0, delta=1e-6,
                          seed=1, features=["a", "b", "c"])


def _row(result: dprect.FitResult) -> pa.Table:
    return result_row(result, run_id=new_run_id(), dataset="unit",
                      started_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
                      extra_parameters={"strategy": "prefetch"})


def test_results_row_holds_only_public_fields(result: dprect.FitResult) -> None:
    row = _row(result).to_pylist()[0]
    assert list(row) == SCHEMA.names
    assert set(row) == {"run_id", "dataset", "features", "lower", "upper", "method",
                        "epsilon", "delta", "neighbouring", "privacy_bound", "parameters",
                        "dprect_version", "started_at"}
    assert row["lower"] == result.lower and row["upper"] == result.upper
    params = json.loads(row["parameters"])
    assert params["plan"] == result.parameters and params["strategy"] == "prefetch"
    assert params["seeded"] is True


def test_results_table_appends_one_row_per_call(result: dprect.FitResult,
                                                tmp_path: Path) -> None:
    path = tmp_path / "results"
    assert append_result(path, _row(result)) == 0
    assert append_result(path, _row(result)) == 1
    table = read_results(path)
    assert table.num_rows == 2 and table.schema.names == SCHEMA.names
    check_results_table(path)  # still a compatible table


def test_results_table_refuses_foreign_paths(result: dprect.FitResult,
                                             tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputDataError, match="is a file"):
        check_results_table(tmp_path / "file")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "a.txt").write_text("x")
    with pytest.raises(InputDataError, match="not a Delta table"):
        check_results_table(tmp_path / "dir")
    from deltalake import write_deltalake

    write_deltalake(str(tmp_path / "other"), pa.table({"x": [1]}))
    with pytest.raises(InputDataError, match="another schema"):
        append_result(tmp_path / "other", _row(result))
    (tmp_path / "empty").mkdir()
    check_results_table(tmp_path / "empty")  # an empty folder is fine


def test_only_private_timezone_aware_results_are_recorded(result: dprect.FitResult) -> None:
    X = np.array([[1.0], [2.0]])
    box = dprect.nonprivate_bounding_box(X, [1, 1], grid=dprect.Grid(0, 4, 4))
    with pytest.raises(ParameterError, match="only differentially private"):
        result_row(box, run_id="r", dataset="d", started_at=datetime.now(UTC))
    with pytest.raises(ParameterError, match="timezone"):
        result_row(result, run_id="r", dataset="d", started_at=datetime(2026, 1, 1))


def test_plot_takes_no_data_and_renders_a_png(result: dprect.FitResult) -> None:
    params = set(inspect.signature(render_png).parameters)
    assert params == {"result", "true_lower", "true_upper", "title", "dpi", "around"}
    assert render_png(result, true_lower=[2, 2, 2], true_upper=[7, 7, 7])[:8] == PNG_MAGIC


def test_plot_handles_unbounded_one_dimensional_and_empty_results() -> None:
    X = np.linspace(-5, 5, 4000)[:, None]
    y = (np.abs(X[:, 0]) < 2).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = dprect.fit(X, y, epsilon=1.0, delta=1e-6, seed=2)  # float-order domain
    assert render_png(r)[:8] == PNG_MAGIC
    assert feature_pairs(1) == [(0, 0)]
    assert feature_pairs(5) == [(0, 1), (2, 3), (3, 4)]


def test_failures_map_to_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    class Py4JJavaError(Exception):
        pass

    Py4JJavaError.__module__ = "py4j.protocol"
    assert describe_failure(ConfigError("bad key"))[0] == EXIT_BAD_INPUT
    assert describe_failure(FileNotFoundError("gone"))[0] == EXIT_BAD_INPUT
    code, msg = describe_failure(Py4JJavaError("boom\n\tat org.apache..."))
    assert code == EXIT_SPARK and msg == "Spark failed: boom"
    assert describe_failure(RuntimeError("bug"))[0] == EXIT_INTERNAL

    def fail() -> int:
        raise InputDataError("column 'x' is missing\nsecond line")

    assert run_job("job", fail) == EXIT_BAD_INPUT
    assert capsys.readouterr().err == "job: error: column 'x' is missing\n"


def test_config_loading_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "none.yaml", section="fit")
    (tmp_path / "bad.yaml").write_text("fit: [unclosed")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(tmp_path / "bad.yaml", section="fit")
    # the message is the path and the parser's line/column, never the parser's text
    # (which quotes the file's lines: a password in a Spark property, say)
    bad = tmp_path / "secret.yaml"
    bad.write_text("spark:\n  conf:\n    key: SECRET_TOKEN_9: x\n")
    with pytest.raises(ConfigError) as info:
        load_config(bad, section="fit")
    assert str(info.value) == f"config file {str(bad)!r} is not valid YAML (line 3, column 24)"
    bad.write_bytes(b"fit:\n  x: \xff SECRET_TOKEN_9\n")  # not UTF-8: said so, and where
    with pytest.raises(ConfigError) as info:
        load_config(bad, section="fit")
    assert str(info.value) == (f"config file {str(bad)!r} is not UTF-8 text (line 2): "
                               "save it as UTF-8")
    (tmp_path / "odd.yaml").write_text("fitt: {}")
    with pytest.raises(ConfigError, match="unknown config section 'fitt'"):
        load_config(tmp_path / "odd.yaml", section="fit")


def test_read_truth_orders_by_feature_and_ignores_other_files(tmp_path: Path) -> None:
    (tmp_path / "t.json").write_text(json.dumps(
        {"features": ["a", "b"], "true_lower": [1, 2], "true_upper": [3, 4]}))
    assert read_truth(tmp_path / "t.json", ["b", "a"]) == ([2.0, 1.0], [4.0, 3.0])
    assert read_truth(tmp_path / "t.json", ["c"]) is None
    assert read_truth(tmp_path / "missing.json", ["a"]) is None


def test_spark_conf_overrides_are_single_properties() -> None:
    from dprect.app.jobs_support import SPARK_OPTIONS, apply_override, section_values

    doc: dict = {}
    apply_override(doc, "spark.conf.spark.driver.memory=2g", section="fit")
    apply_override(doc, "spark.conf.spark.ui.enabled=false", section="fit")
    conf = section_values(doc, "spark", SPARK_OPTIONS)["conf"]
    assert conf == {"spark.driver.memory": "2g", "spark.ui.enabled": "false"}
    with pytest.raises(ConfigError, match="single value"):
        section_values({"spark": {"conf": {"a": {"b": 1}}}}, "spark", SPARK_OPTIONS)


def test_output_paths_are_checked_without_writing(tmp_path: Path) -> None:
    from dprect.release.files import check_output_path

    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    check_output_path(tmp_path / "r.json", "out")  # a new file in a folder
    check_output_path(tmp_path / "file", "out")  # an existing file is replaced
    check_output_path(tmp_path / "new" / "deeper" / "r.json", "out")  # folders are made
    check_output_path(tmp_path / "dir", "table", folder=True)
    check_output_path(tmp_path / "new_table", "table", folder=True)
    with pytest.raises(ParameterError, match=r"out .* is a folder"):
        check_output_path(tmp_path / "dir", "out")
    with pytest.raises(ParameterError, match=r"table .* is a file"):
        check_output_path(tmp_path / "file", "table", folder=True)
    with pytest.raises(ParameterError, match="is not a folder"):
        check_output_path(tmp_path / "file" / "r.json", "out")
    with pytest.raises(ParameterError, match="is not a folder"):
        check_output_path(tmp_path / "file" / "a" / "b.json", "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "file"]  # nothing made


def test_unwritable_output_folder_is_refused(tmp_path: Path) -> None:
    import os

    from dprect.release.files import check_output_path

    if os.geteuid() == 0:
        pytest.skip("root may write anywhere")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(ParameterError, match="no write permission"):
            check_output_path(locked / "r.json", "out")
        with pytest.raises(ParameterError, match="no write permission"):
            check_output_path(locked / "sub" / "r.json", "out")
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize("folder", [False, True], ids=["file", "folder"])
@pytest.mark.parametrize("kind", KINDS)
def test_an_output_at_a_device_fifo_or_socket_is_refused_naming_it(
        tmp_path: Path, kind: str, folder: bool) -> None:
    """An output at a device, a FIFO or a socket, or a link to one, passed the check — the
    folder around it takes a temporary file — and the output, renamed into place, would
    have replaced it (``/dev/null`` itself, run as root). It is refused naming the path
    and what it is, without opening it (a FIFO would block), and left as it was."""
    import stat

    from dprect.release.files import check_output_path

    path, said = special(kind, tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    mode = path.lstat().st_mode
    noun = "folder" if folder else "regular file"
    with pytest.raises(ParameterError) as refused:
        check_output_path(path, "--output", folder=folder)
    assert str(refused.value) == (
        f"--output {str(path)!r} {said}, not a {noun}: the output would replace it, not "
        f"write to it; give a {'folder' if folder else 'file'} path")
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert path.lstat().st_mode == mode
    if kind == "fifo":
        assert stat.S_ISFIFO(path.stat().st_mode)
