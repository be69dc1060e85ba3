"""A Spark (JVM) write that fails is reported by the reason its Java cause chain gives —
the operating system's words of a full disk, a Spark error condition, a Java class —
never by Java's text, and no longer only as "(Py4JJavaError)" (session 42: a Spark Delta
results-table append on a full 256 KB tmpfs raised ``Py4JJavaError`` around Hadoop's
``FSError: java.io.IOException: No space left on device``, and the run's line said
"no output was written (Py4JJavaError)"). The Java exceptions here are real ones, built
in the test session's JVM, with a sentinel in every text that must not be shown."""

from __future__ import annotations

from datetime import datetime

import pytest
from py4j.protocol import Py4JJavaError

from dprect.release.files import failure_reason
from dprect.release.sinks import NotPublishedError, Release, Write, publish

SECRET = "SECRET-VALUE-42"


def _error(java_exc) -> Py4JJavaError:
    return Py4JJavaError(f"An error occurred while calling o1.save. {SECRET}\n", java_exc)


def test_a_full_disk_under_spark_is_named_by_the_os_words(spark):
    jvm = spark.sparkContext._jvm
    io = jvm.java.io.IOException("No space left on device")
    # Hadoop's FSError (an Error, its constructor not public) around the IOException
    fs_error = jvm.java.lang.Error(f"java.io.IOException: No space left on device {SECRET}",
                                   io)
    full = jvm.java.lang.RuntimeException(SECRET, fs_error)
    assert failure_reason(_error(full)) == "No space left on device"


def test_otherwise_the_spark_condition_or_the_java_class(spark):
    jvm = spark.sparkContext._jvm
    internal = jvm.java.lang.RuntimeException(
        SECRET, jvm.org.apache.spark.SparkException.internalError(SECRET))
    assert failure_reason(_error(internal)) == "INTERNAL_ERROR"
    # an IOException whose text is not an operating-system error's words alone
    other = jvm.java.lang.RuntimeException(
        SECRET, jvm.java.io.IOException(f"No space left on device {SECRET}"))
    assert failure_reason(_error(other)) == "java.io.IOException"


def test_a_failed_spark_write_in_publish_is_one_line_with_the_reason(spark):
    jvm = spark.sparkContext._jvm
    io = jvm.java.io.IOException("No space left on device")

    def commit() -> str:
        raise _error(jvm.java.lang.RuntimeException(SECRET, io))

    release = Release({}, "r1", datetime(2026, 12, 2))
    sink = type("S", (), {"name": "--results-table", "path": "/nonexistent-dprect/t",
                          "prepare": lambda self, r: Write(commit)})()
    with pytest.raises(NotPublishedError) as caught:
        publish([sink], release)
    text = str(caught.value)
    assert text.startswith("no output was written (No space left on device); ")
    assert SECRET not in text and "Py4J" not in text
