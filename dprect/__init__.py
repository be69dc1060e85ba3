"""dprect — differentially private axis-aligned rectangles (RandMargins).

The private core (everything here except :mod:`dprect.engines.spark`) never imports pyspark.
"""

from dprect._version import __version__
from dprect.app.api import bounds, fit, fit_engine, nonprivate_bounding_box
from dprect.app.describe import describe, mean_bounds
from dprect.core.accounting import Guarantee
from dprect.core.aggregates import DescribePlan, DescribeResult, plan_describe
from dprect.core.bounds import BoundsPlan, BoundsResult, plan_bounds
from dprect.core.domains import (
    Domain,
    FloatBins,
    FloatOrder,
    Grid,
    IntegerRange,
    parse_grid_spec,
)
from dprect.core.errors import DprectError, InputDataError, ParameterError
from dprect.core.interior_point import interior_point, interior_point_size
from dprect.core.labels import LabelText
from dprect.core.margins import LaplaceLaw, StaircaseLaw
from dprect.core.planner import Plan, plan
from dprect.core.randomness import RandomSource
from dprect.core.request import (
    Accounting,
    BoundsRequest,
    FitRequest,
    InvalidRows,
    MarginLawName,
    Method,
    Neighbouring,
    PlanRequest,
    Shape,
)
from dprect.core.result import FitResult

__all__ = [
    "Accounting",
    "BoundsPlan",
    "BoundsRequest",
    "BoundsResult",
    "DescribePlan",
    "DescribeResult",
    "Domain",
    "DprectError",
    "FitRequest",
    "FitResult",
    "FloatBins",
    "FloatOrder",
    "Grid",
    "Guarantee",
    "InputDataError",
    "IntegerRange",
    "InvalidRows",
    "LabelText",
    "LaplaceLaw",
    "MarginLawName",
    "Method",
    "Neighbouring",
    "ParameterError",
    "Plan",
    "PlanRequest",
    "RandomSource",
    "Shape",
    "StaircaseLaw",
    "__version__",
    "bounds",
    "describe",
    "fit",
    "fit_engine",
    "interior_point",
    "interior_point_size",
    "mean_bounds",
    "nonprivate_bounding_box",
    "parse_grid_spec",
    "plan",
    "plan_bounds",
    "plan_describe",
]
