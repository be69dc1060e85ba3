"""dprect — differentially private axis-aligned rectangles (RandMargins).

The private core (everything here except :mod:`dprect.engines.spark`) never imports pyspark.
"""

from dprect._version import __version__
from dprect.app.api import fit, fit_engine, nonprivate_bounding_box
from dprect.app.describe import aggregate, bounds, describe, mean_bounds
from dprect.core.accounting import Guarantee
from dprect.core.aggregates import DescribePlan, DescribeResult, plan_describe
from dprect.core.bounds import BoundsPlan, BoundsResult, plan_bounds
from dprect.core.classes import ClassesResult
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
from dprect.release.budget import PrivacyBudget, PrivacyBudgetWarning
from dprect.release.ledger import BudgetExceededError

__all__ = [
    "Accounting",
    "BoundsPlan",
    "BoundsRequest",
    "BoundsResult",
    "BudgetExceededError",
    "ClassesResult",
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
    "PrivacyBudget",
    "PrivacyBudgetWarning",
    "RandomSource",
    "RectangleClassifier",
    "Shape",
    "StaircaseLaw",
    "__version__",
    "aggregate",
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


def __getattr__(name: str) -> object:
    """``dprect.RectangleClassifier`` is imported on first use: it needs the ``sklearn``
    extra (a one-line :class:`~dprect.core.extras.MissingExtraError` without it)."""
    if name == "RectangleClassifier":
        from dprect.app.classifier import RectangleClassifier

        return RectangleClassifier
    raise AttributeError(f"module 'dprect' has no attribute {name!r}")
