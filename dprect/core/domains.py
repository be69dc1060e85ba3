"""Per-feature domains: how a feature value becomes a point of a finite ordered grid.

Every axis j is an ordered finite grid {0, …, m_j − 1} (docs/algorithm.md §1). A feature
reaches it through PUBLIC parameters only — bounds are never derived from the data.

Four domains:

* :class:`Grid` ``(lower, upper, size)`` — ``size`` equal bins of width
  w = (upper − lower)/size; x ↦ ⌊(x − lower)/w⌋ clamped to {0, …, size−1} (values outside
  the bounds clamp to the end bins). Index i ↦ the bin [lower + i·w, lower + (i+1)·w].
* :class:`IntegerRange` ``(lower, upper)`` — one grid point per integer; x ↦ ⌊x⌋ − lower,
  clamped. Index i ↦ the integer lower + i.
* :class:`FloatOrder` — every float64 (±inf included, NaN excluded) through an
  order-preserving 64-bit key: no bounds at all, m = 2^64 − 2^53 + 2 ≈ 2^64 (every
  non-NaN bit pattern; it costs ln(2^64) ≈ 44 in Δ instead of ln m).
  −0.0 is read as +0.0.
* :class:`FloatBins` ``(bits=12)`` — every float64 on a public log-scale grid: the same
  order key, cut into 2^bits bins per binade (relative bin width ≤ 2^−bits), m = 2^(12+bits)
  bins and no bounds (docs/algorithm.md §9). Its sort values are int64 bin indices; it has
  no SQL twin (:meth:`FloatBins.sort_sql` raises: an engine encodes it with numpy).

Engines see *sort values*: the representation an engine sorts and filters on. For
:class:`Grid`/:class:`IntegerRange` these are the int64 grid indices themselves; for
:class:`FloatOrder` they are the (canonical) float64 values, whose order is exactly the key
order. The core converts sort values to grid indices (:meth:`Domain.to_index`) and a grid
index threshold back to a sort-value threshold (:meth:`Domain.cut_threshold`), so that an
engine's cut "sort value ≥ t" (hi) or "≤ t" (lo) removes exactly the rows whose grid index
is ≥ p or ≤ p.

Everything that depends on the kind of domain is a method of its class — the encoding and
its SQL twin (:meth:`Domain.sort_sql`, which the Spark engine runs), the index and
threshold maps, feature units, the public :attr:`Domain.bounds` and the JSON — so no other
module tests which domain it holds.
"""

from __future__ import annotations

import math
import struct
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from dprect.core.errors import ParameterError
from dprect.core.sql_text import as_double, literal
from dprect.core.validation import repeat_at

Side = Literal["hi", "lo"]

_MAX_GRID_SIZE = 2**53  # bins indexed exactly by float64 arithmetic
#: the most features a plan or a fit accepts (docs/operations.md, refused inputs): with
#: R = 2d rounds the tie bits reach 2^b >= R/TIE_OVERSHOOT = 100R within their cap of 2^20
#: (dprect.core.ties) up to d = 5,242, and the plan's rounds, its JSON and the accountant's
#: search over k <= R all grow with d; 4,096 = 4 x the Spark engine's tested 1,024
MAX_DIMS = 4096


class Domain(ABC):
    """A public, finite, ordered domain for one feature."""

    #: number of grid points m
    size: int

    @abstractmethod
    def encode(self, x: np.ndarray) -> np.ndarray:
        """Feature values (float64 — or float32, which every encoding widens to float64
        exactly first — finite) → sort values (numpy reference encoding)."""

    @property
    def sort_dtype(self) -> np.dtype:
        """The dtype of :meth:`encode`'s sort values (int64 or float64)."""
        return self.encode(np.empty(0)).dtype

    @abstractmethod
    def sort_sql(self, column: str) -> str:
        """The SQL twin of :meth:`encode` for column ``column`` (Spark SQL text).

        Guarantee: for every finite value, the expression evaluated on the column read as
        a double equals :meth:`encode` of that value, bit for bit and with the same type
        (a BIGINT for int64 sort values, a DOUBLE for float64 ones). Text, not a Spark
        Column, so the core never imports pyspark (:mod:`dprect.core.sql_text`)."""

    @property
    @abstractmethod
    def bounds(self) -> tuple[float, float] | None:
        """The public bounds in feature units (None for a domain without bounds)."""

    def to_index(self, sort_values: np.ndarray) -> np.ndarray:
        """Sort values → grid indices in {0, …, m−1} as uint64 (here: int64 sort values
        that are the indices themselves; the float order's are floats)."""
        return np.asarray(sort_values, dtype=np.int64).astype(np.uint64)

    def cut_threshold(self, index: int, side: Side) -> int | float:
        """A sort-value threshold t such that, over encoded data, ``v >= t`` (hi) or
        ``v <= t`` (lo) holds exactly when the grid index is ≥ / ≤ ``index`` (here: the
        index itself, as :meth:`to_index`)."""
        return int(index)

    @abstractmethod
    def lower_value(self, index: int) -> float:
        """Feature-unit value of a lower bound at grid index ``index``."""

    @abstractmethod
    def upper_value(self, index: int) -> float:
        """Feature-unit value of an upper bound at grid index ``index``."""

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """A JSON-ready description (public parameters only)."""

    def least_value_from(self, sort_value: int | float) -> float | None:
        """The least float64 x (NaN excluded) with ``encode(x) >= sort_value``; None when
        no float64 reaches ``sort_value``.

        Every encoding is non-decreasing in x over the float64 order (−0.0 = +0.0):
        IEEE-754 subtraction and division by a positive width round monotonically, and
        clamping, truncation of a non-negative value and the order key of the float
        domains are monotone (docs/architecture.md, the ``pass`` strategy's prefilter). So
        {x : encode(x) ≥ s} is an up-set of that order, and bisection over the order keys
        (at most 64 steps, with :meth:`encode` itself) finds its least element exactly —
        no bin-edge formula to round the wrong way."""
        return _bisect_values(lambda x: bool(self.encode(np.array([x]))[0] >= sort_value),
                              up=True)

    def greatest_value_to(self, sort_value: int | float) -> float | None:
        """The greatest float64 x (NaN excluded) with ``encode(x) <= sort_value``; None
        when every float64 encodes above it (the mirror of :meth:`least_value_from`)."""
        return _bisect_values(lambda x: bool(self.encode(np.array([x]))[0] <= sort_value),
                              up=False)



class Grid(Domain):
    """``size`` equal bins between public bounds ``lower`` < ``upper``.

    Values outside ``[lower, upper]`` are clamped, silently: a value below ``lower``
    (−inf included) counts as the first bin, one above ``upper`` as the last. With
    ``Grid(0, 100, 2**20)`` a column whose values are in the thousands lands entirely in
    the last bin: the learned bounds on that axis are that one bin, [99.9999, 100], which
    says nothing about the values. No warning is possible: whether any value was clamped
    is a fact about the data, which nothing may report. Take the bounds from public
    knowledge (units, a form's valid range, a published schema) — never from the data —
    or use :class:`FloatOrder`, which needs none.
    """

    def __init__(self, lower: float, upper: float, size: int) -> None:
        for name, value in (("lower", lower), ("upper", upper)):
            if isinstance(value, bool) or not isinstance(value, int | float | np.number):
                raise ParameterError(f"grid {name} must be a number, got {value!r}")
            if not math.isfinite(float(value)):
                raise ParameterError(f"grid {name} must be finite, got {value!r}")
        if isinstance(size, bool) or not isinstance(size, int | np.integer):
            raise ParameterError(f"grid size must be an integer, got {size!r}")
        if not 2 <= int(size) <= _MAX_GRID_SIZE:
            raise ParameterError(f"grid size must be between 2 and 2**53, got {size}")
        if not float(lower) < float(upper):
            raise ParameterError(
                f"grid lower must be < upper (empty or inverted grid), got {lower} >= {upper}"
            )
        self.lower = float(lower)
        self.upper = float(upper)
        self.size = int(size)
        self.width = (self.upper - self.lower) / self.size
        if not self.width > 0 or not math.isfinite(self.width):
            raise ParameterError(f"grid [{lower}, {upper}] with {size} bins has no usable width")
        resolution = math.ulp(max(abs(self.lower), abs(self.upper)))
        if self.width < 4 * resolution:
            raise ParameterError(
                f"grid [{lower}, {upper}] with {size} bins is finer than float64 resolution "
                f"there (bin width {self.width:.3g} < 4 x {resolution:.3g}); use fewer bins")

    def encode(self, x: np.ndarray) -> np.ndarray:
        # Spark engine mirrors this exactly: floor(least(greatest((x-lower)/w, 0), size-1)).
        # A value far outside the bounds (1e308) overflows to ±inf in IEEE-754 double
        # arithmetic, exactly as in Spark SQL, and clamps to an end bin: the overflow is
        # expected, so numpy is told not to warn about it (the results are unchanged).
        # In place, and without np.floor: after the clip r is in [0, size − 1] (size ≤
        # 2^53, so exact as a double), where truncation to int64 IS the floor. A float32
        # input is widened exactly by the subtraction's float64 dtype.
        with np.errstate(over="ignore", under="ignore"):
            r = np.subtract(x, self.lower, dtype=np.float64)
            r /= self.width
        np.clip(r, 0.0, float(self.size - 1), out=r)
        return r.astype(np.int64)

    def sort_sql(self, column: str) -> str:
        # floor(least(greatest((x − lower)/width, 0.0), size − 1.0)) as a long, with the
        # same double literals as encode: double arithmetic never raises an ANSI error,
        # and the floor lies in [0, size − 1] ⊂ ±2^53, so the cast is exact.
        x = as_double(column)
        r = f"(({x} - {literal(float(self.lower))}) / {literal(float(self.width))})"
        clipped = f"least(greatest({r}, {literal(0.0)}), {literal(float(self.size - 1))})"
        return f"CAST(floor({clipped}) AS BIGINT)"

    @property
    def bounds(self) -> tuple[float, float]:
        return self.lower, self.upper

    def lower_value(self, index: int) -> float:
        return self.lower + int(index) * self.width

    def upper_value(self, index: int) -> float:
        return min(self.lower + (int(index) + 1) * self.width, self.upper)

    def to_json(self) -> dict[str, Any]:
        return {"type": "grid", "lower": self.lower, "upper": self.upper, "size": self.size}


    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.to_json().items())))

    def __repr__(self) -> str:
        return f"Grid(lower={self.lower!r}, upper={self.upper!r}, size={self.size})"


class IntegerRange(Grid):
    """One grid point per integer in [lower, upper] (both public); values outside the
    range are clamped to its ends, silently, as with :class:`Grid`."""

    def __init__(self, lower: int, upper: int) -> None:
        for name, value in (("lower", lower), ("upper", upper)):
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise ParameterError(f"integer range {name} must be an integer, got {value!r}")
        if not int(lower) < int(upper):
            raise ParameterError(
                f"integer range lower must be < upper (empty or inverted), got {lower} >= {upper}"
            )
        if abs(int(lower)) > _MAX_GRID_SIZE or abs(int(upper)) > _MAX_GRID_SIZE:
            raise ParameterError("integer range bounds must lie within ±2**53")
        super().__init__(float(lower), float(int(upper) + 1), int(upper) - int(lower) + 1)
        self.int_lower = int(lower)
        self.int_upper = int(upper)

    def lower_value(self, index: int) -> float:
        return float(self.int_lower + int(index))

    def upper_value(self, index: int) -> float:
        return float(self.int_lower + int(index))

    @property
    def bounds(self) -> tuple[float, float]:
        return float(self.int_lower), float(self.int_upper)

    def to_json(self) -> dict[str, Any]:
        return {"type": "integers", "lower": self.int_lower, "upper": self.int_upper,
                "size": self.size}


    def __repr__(self) -> str:
        return f"IntegerRange(lower={self.int_lower}, upper={self.int_upper})"


# -- float-order domain -----------------------------------------------------------------
_LOW63 = 0x7FFF_FFFF_FFFF_FFFF


def _key_of_bits(bits: int) -> int:
    """Signed order key of a float64 bit pattern (as a signed 64-bit int)."""
    return bits ^ _LOW63 if bits < 0 else bits


def _float_key(x: float) -> int:
    (bits,) = struct.unpack("<q", struct.pack("<d", x))
    return _key_of_bits(bits)


_KEY_NEG_INF = _float_key(-math.inf)
_KEY_POS_INF = _float_key(math.inf)


def _float_of_key(key: int) -> float:
    """The float64 with order key ``key`` (the inverse of :func:`_float_key`)."""
    (value,) = struct.unpack("<d", struct.pack("<q", key ^ _LOW63 if key < 0 else key))
    return value


def _bisect_values(holds: Callable[[float], bool], *, up: bool) -> float | None:
    """For a predicate on the non-NaN float64s that holds on an up-set (``up``) or a
    down-set of their order: the up-set's least, or the down-set's greatest, element
    (None when it holds nowhere). Bisection over the order keys, whose integer order is
    the float order (−inf … +inf, every key between a float)."""
    first, last = _KEY_NEG_INF, _KEY_POS_INF
    inner, outer = (last, first) if up else (first, last)
    if not holds(_float_of_key(inner)):
        return None
    if holds(_float_of_key(outer)):
        return _float_of_key(outer)
    # invariant: holds at inner, not at outer
    while abs(inner - outer) > 1:
        mid = (inner + outer) // 2
        if holds(_float_of_key(mid)):
            inner = mid
        else:
            outer = mid
    return _float_of_key(inner)
_KEY_NEG_ZERO = _float_key(-0.0)  # == -1; never a data key (data is canonicalised)
_SMALLEST_NEGATIVE = -5e-324


class FloatOrder(Domain):
    """All float64 values in their natural order; no bounds needed.

    Grid index of x = key(x) − key(−inf), where key is the order-preserving map of the
    IEEE-754 bit pattern to a signed 64-bit integer (negative patterns have their 63 low
    bits flipped). The indices run over 0 … m−1 with m = key(+inf) − key(−inf) + 1.
    """

    size = _KEY_POS_INF - _KEY_NEG_INF + 1

    def encode(self, x: np.ndarray) -> np.ndarray:
        x = np.array(x, dtype=np.float64, copy=True)
        x[x == 0.0] = 0.0  # -0.0 -> +0.0 (they compare equal; keys would differ)
        return x

    def sort_sql(self, column: str) -> str:
        # x as a double with −0.0 read as +0.0 (Spark's = treats them as equal, as numpy)
        x = as_double(column)
        zero = literal(0.0)
        return f"CAST(CASE WHEN {x} = {zero} THEN {zero} ELSE {x} END AS DOUBLE)"

    @property
    def bounds(self) -> None:
        return None

    def to_index(self, sort_values: np.ndarray) -> np.ndarray:
        bits = np.ascontiguousarray(sort_values, dtype=np.float64).view(np.int64)
        keys = np.where(bits < 0, bits ^ np.int64(_LOW63), bits)
        offset = np.uint64(_KEY_NEG_INF % 2**64)
        return keys.view(np.uint64) - offset  # wraps modulo 2^64: exact index

    @staticmethod
    def float_at(index: int) -> float:
        """The float64 whose grid index is ``index``."""
        key = int(index) + _KEY_NEG_INF
        bits = key ^ _LOW63 if key < 0 else key
        (value,) = struct.unpack("<d", struct.pack("<q", bits))
        return value

    @staticmethod
    def index_of(x: float) -> int:
        """Grid index of one float (after canonicalising −0.0)."""
        return _float_key(0.0 if x == 0.0 else float(x)) - _KEY_NEG_INF

    def cut_threshold(self, index: int, side: Side) -> float:
        if int(index) + _KEY_NEG_INF == _KEY_NEG_ZERO:
            # -0.0 is a grid point no data value has: the first data value at or above it
            # is +0.0, the last at or below it is the largest negative subnormal.
            return 0.0 if side == "hi" else _SMALLEST_NEGATIVE
        return self.float_at(index)

    def lower_value(self, index: int) -> float:
        return self.float_at(index)

    def upper_value(self, index: int) -> float:
        return self.float_at(index)

    def to_json(self) -> dict[str, Any]:
        return {"type": "float", "size": self.size}


    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash("FloatOrder")

    def __repr__(self) -> str:
        return "FloatOrder()"


# -- log-scale float bins ----------------------------------------------------------------
_U64_SIGN = np.uint64(1 << 63)
_POS_INF_BITS = 0x7FF0_0000_0000_0000  # the bit pattern of +inf (its magnitude for -inf)
MAX_FLOAT_BINS_BITS = 20


def _float_of_magnitude(pattern: int) -> float:
    """The non-negative float64 with bit pattern ``pattern`` (≤ +inf's pattern)."""
    (value,) = struct.unpack("<d", struct.pack("<Q", pattern))
    return value


class FloatBins(Domain):
    """Every float64 on a public, data-independent log-scale grid; no bounds needed.

    **The bins.** Let u(x) be the *unsigned* 64-bit IEEE order key of x: the bit pattern
    with the sign bit set for x ≥ +0.0 and all bits flipped for x < 0, so that u is
    strictly increasing in x over all non-NaN floats. (It is :class:`FloatOrder`'s key
    shifted by a constant: ``FloatOrder.index_of(x) == u(x) − (2^52 − 1)``; the unsigned
    form is used so that bin edges fall on binade edges.) Bin i holds the floats with
    u(x) >> (52 − bits) = i. So every binade — the floats sharing sign and exponent — is
    split into 2^bits bins by its top ``bits`` mantissa bits: a bin of normal floats spans
    [v, v·(1 + 2^−bits)) or less, the subnormals of each sign share 2^bits bins of equal
    width, and there are m = 2^(12+bits) bins (2^24 at the default 12 bits), in the
    order of the values. −0.0 is read as +0.0 (as :class:`FloatOrder` does): +0.0 opens
    bin H = 2^(11+bits), the smallest positive floats share it, and the smallest negative
    ones fill bin H − 1.

    **Infinities and NaN.** ±inf are ordinary points of the order, as in
    :class:`FloatOrder`: +inf lies in bin H + 2047·2^bits, the first bin past the largest
    finite float's, −inf mirrored below. The 2^bits − 1 bins beyond each infinity hold only
    NaN bit patterns, which are not feature values (callers drop rows with NaN, and with
    ±inf under the invalid-row policy); their values read as ±inf (:meth:`lower_value`,
    :meth:`upper_value`). ``encode`` never raises: a NaN, if given, lands in a NaN-only bin.

    **Use.** Sort values are the int64 bin indices (like :class:`Grid`), so the grid
    methods (``to_index``, ``cut_threshold``) are the identity. ``lower_value(i)`` is the
    smallest float of bin i and ``upper_value(i)`` the largest (−0.0 excluded: the largest
    of bin H − 1 is −5e-324), so the clamp [lower_value(i), upper_value(j)] keeps exactly
    the rows with bin index in [i, j]. It is the natural grid of the private bounds
    (:mod:`dprect.core.bounds`), where it costs ln(2^24) instead of :class:`FloatOrder`'s
    ln(2^64) per exponential mechanism, and it also serves as a rectangle axis (RandMargins,
    the baseline). It is not a :class:`Grid`, so the tie-breaking refinement
    (:func:`dprect.core.ties.hashable`) leaves it unrefined, as it does float-order axes.

    **No SQL.** :meth:`sort_sql` raises a :class:`ParameterError`: Spark SQL has no
    portable way to read a double's bit pattern, so the Spark engine encodes FloatBins with
    this numpy ``encode`` (e.g. in a pandas UDF).
    """

    def __init__(self, bits: int = 12) -> None:
        if isinstance(bits, bool) or not isinstance(bits, int | np.integer) \
                or not 1 <= int(bits) <= MAX_FLOAT_BINS_BITS:
            raise ParameterError(
                f"floatbins bits must be an integer in [1, {MAX_FLOAT_BINS_BITS}], "
                f"got {bits!r}")
        self.bits = int(bits)
        self.shift = 52 - self.bits
        self.size = 1 << (12 + self.bits)
        self._zero_bin = 1 << (11 + self.bits)  # H: the bin of +0.0

    def encode(self, x: np.ndarray) -> np.ndarray:
        a = np.asarray(x, dtype=np.float64)
        b = (a if a.flags.c_contiguous else a.copy()).view(np.uint64)  # any shape, 0-d too
        # negative patterns (above the sign bit) complemented, the rest with the sign bit
        # set: the order of the floats; −0.0 (the sign bit alone) lands on +0.0's pattern
        u = np.where(b > _U64_SIGN, ~b, b | _U64_SIGN)
        u >>= np.uint64(self.shift)
        return u.view(np.int64)

    def index_of(self, x: float) -> int:
        """The bin index of one float."""
        return int(self.encode(np.array([x]))[0])

    def sort_sql(self, column: str) -> str:
        raise ParameterError("FloatBins has no SQL encoding; the Spark engine encodes it "
                             "with numpy (FloatBins.encode)")

    @property
    def bounds(self) -> None:
        return None

    def _magnitudes(self, index: int) -> tuple[int, int, bool]:
        """(smallest, largest) magnitude bit patterns of bin ``index``, capped at inf's,
        and whether the bin is negative."""
        i = int(index)
        if not 0 <= i < self.size:
            raise ParameterError(f"a bin index is outside [0, {self.size}) (an internal "
                                 "invariant: indices come from this grid)")
        negative = i < self._zero_bin
        j = self._zero_bin - 1 - i if negative else i - self._zero_bin
        low = min(j << self.shift, _POS_INF_BITS)
        high = min(((j + 1) << self.shift) - 1, _POS_INF_BITS)
        return low, high, negative

    def lower_value(self, index: int) -> float:
        """The smallest float of bin ``index`` (−inf for the NaN-only bins below −inf)."""
        low, high, negative = self._magnitudes(index)
        return -_float_of_magnitude(high) if negative else _float_of_magnitude(low)

    def upper_value(self, index: int) -> float:
        """The largest float of bin ``index`` (+inf for the NaN-only bins above +inf; −0.0
        is read as +0.0, so bin H − 1 ends at the largest negative subnormal)."""
        low, high, negative = self._magnitudes(index)
        if not negative:
            return _float_of_magnitude(high)
        return -_float_of_magnitude(max(low, 1))

    def to_json(self) -> dict[str, Any]:
        return {"type": "floatbins", "bits": self.bits}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FloatBins) and type(other) is type(self) \
            and other.bits == self.bits

    def __hash__(self) -> int:
        return hash(("FloatBins", self.bits))

    def __repr__(self) -> str:
        return f"FloatBins(bits={self.bits})"


# -- --grid parsing ---------------------------------------------------------------------
def parse_domain(text: str) -> Domain:
    """One domain from its spelling: ``float``, ``floatbins``, ``floatbins:BITS``,
    ``int:LOWER:UPPER`` or ``LOWER:UPPER:SIZE``."""
    spec = text.strip()
    if spec == "float":
        return FloatOrder()
    if spec == "floatbins":
        return FloatBins()
    parts = spec.split(":")
    if parts[0] == "floatbins":
        if len(parts) != 2 or not parts[1].strip().isdigit():
            raise ParameterError(f"cannot read grid {text!r}: expected 'floatbins' or "
                                 f"'floatbins:BITS' with BITS an integer in "
                                 f"[1, {MAX_FLOAT_BINS_BITS}]")
        return FloatBins(int(parts[1]))
    try:
        if parts[0] == "int" and len(parts) == 3:
            return IntegerRange(int(parts[1]), int(parts[2]))
        if len(parts) == 3:
            size = float(parts[2])
            if not size.is_integer():
                raise ParameterError(f"grid size must be an integer, got {parts[2]!r}")
            return Grid(float(parts[0]), float(parts[1]), int(size))
    except ValueError as exc:
        if isinstance(exc, ParameterError):
            raise
        raise ParameterError(f"cannot read grid {text!r}: {exc}") from None
    raise ParameterError(
        f"cannot read grid {text!r}: expected 'float', 'floatbins[:BITS]', 'int:LOWER:UPPER' "
        f"or 'LOWER:UPPER:SIZE'"
    )


def parse_grid_spec(spec: str | None, features: list[str]) -> list[Domain]:
    """The domains of ``features`` from a ``--grid`` value.

    * None or ``float`` — the float-order domain for every feature (the default);
    * ``floatbins`` or ``floatbins:BITS`` — the log-scale :class:`FloatBins` for every
      feature;
    * ``LOWER:UPPER:SIZE`` (or ``int:L:U``) — the same domain for every feature;
    * ``name=SPEC,name=SPEC,...`` — one domain per feature; every feature must be named
      exactly once.
    """
    if spec is None or not spec.strip():
        return [FloatOrder() for _ in features]
    if "=" not in spec:
        domain = parse_domain(spec)
        return [domain for _ in features]
    by_name: dict[str, Domain] = {}
    for item in spec.split(","):
        if "=" not in item:
            raise ParameterError(f"grid entry {item!r} must look like name=SPEC")
        name, value = (part.strip() for part in item.split("=", 1))
        if name in by_name:
            raise ParameterError(f" names feature {name!r} twice", parameter="grid")
        if name not in features:
            raise ParameterError(f" names {name!r}, which is not one of the features",
                                 parameter="grid")
        by_name[name] = parse_domain(value)
    missing = [f for f in features if f not in by_name]
    if missing:
        raise ParameterError(f"grid gives no domain for feature(s): {', '.join(missing)}")
    return [by_name[f] for f in features]


def domain_from_json(data: dict[str, Any]) -> Domain:
    """Inverse of :meth:`Domain.to_json`."""
    kind = data.get("type")
    if kind == "float":
        return FloatOrder()
    if kind == "floatbins":
        return FloatBins(int(data["bits"]))
    if kind == "integers":
        return IntegerRange(int(data["lower"]), int(data["upper"]))
    if kind == "grid":
        return Grid(float(data["lower"]), float(data["upper"]), int(data["size"]))
    raise ParameterError(f"unknown domain type {kind!r}")


GridArg = Domain | Sequence[Domain] | str | None


def resolve_domains(grid: GridArg, features: list[str]) -> list[Domain]:
    """Domains for ``features`` from a Domain (same for all), a list (one per feature), a
    ``--grid`` string, or None (the float-order domain for all)."""
    if grid is None or isinstance(grid, str):
        return parse_grid_spec(grid, features)
    if isinstance(grid, Domain):
        return [grid for _ in features]
    domains = list(grid)
    if len(domains) != len(features):
        raise ParameterError(
            f"grid has {len(domains)} domains but there are {len(features)} features")
    for i, d in enumerate(domains):
        if not isinstance(d, Domain):
            raise ParameterError(f"grid[{i}] must be a Domain, got {d!r}")
    return domains


def check_dims(count: int, what: str) -> int:
    """``count`` features, refused (one line naming ``what``, an option or argument)
    above :data:`MAX_DIMS`: checked before any list of that length is built."""
    if count > MAX_DIMS:
        raise ParameterError(f"{what} gives {count:,} features, more than the limit of "
                             f"{MAX_DIMS:,} features (MAX_DIMS)")
    return count


def feature_names(features: Sequence[str] | None, dims: int) -> list[str]:
    """Feature names (x0, x1, … by default); duplicates are refused."""
    if features is None:
        return [f"x{j}" for j in range(dims)]
    names = [str(f) for f in features]
    if len(names) != dims:
        raise ParameterError(f"features has {len(names)} names but X has {dims} columns")
    if (i := repeat_at(names)) is not None:
        raise ParameterError(f"feature {names[i]!r} is named twice")
    return names
