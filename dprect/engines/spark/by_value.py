"""What the executors get with a task, by value: the core's domains (their numpy
``encode``: the one encoding of each domain), ties and the little they import, so the
executors need numpy and pyarrow, not dprect (cloudpickle pickles a module registered
here with the function or object that uses it). Importing this module registers them."""

from __future__ import annotations

import sys

from pyspark import cloudpickle

import dprect.core.domains
import dprect.core.errors
import dprect.core.sql_text
import dprect.core.ties
import dprect.core.validation

#: the core modules shipped by value
CORE_BY_VALUE = (dprect.core.domains, dprect.core.ties, dprect.core.errors,
                 dprect.core.sql_text, dprect.core.validation)

for _module in CORE_BY_VALUE:
    cloudpickle.register_pickle_by_value(sys.modules[_module.__name__])

__all__ = ["CORE_BY_VALUE"]
