"""dprect — differentially private axis-aligned rectangles (RandMargins).

The private core (everything here except :mod:`dprect.spark`) never imports pyspark.
"""

from dprect._version import __version__
from dprect.accounting import Guarantee
from dprect.api import fit, fit_engine, nonprivate_bounding_box
from dprect.domains import Domain, FloatOrder, Grid, IntegerRange, parse_grid_spec
from dprect.errors import DprectError, InputDataError, ParameterError
from dprect.interior_point import interior_point, interior_point_size
from dprect.margins import LaplaceLaw, StaircaseLaw
from dprect.planner import Plan, plan
from dprect.randomness import RandomSource
from dprect.result import FitResult

__all__ = [
    "Domain",
    "DprectError",
    "FitResult",
    "FloatOrder",
    "Grid",
    "Guarantee",
    "InputDataError",
    "IntegerRange",
    "LaplaceLaw",
    "ParameterError",
    "Plan",
    "RandomSource",
    "StaircaseLaw",
    "__version__",
    "fit",
    "fit_engine",
    "interior_point",
    "interior_point_size",
    "nonprivate_bounding_box",
    "parse_grid_spec",
    "plan",
]
