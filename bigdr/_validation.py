"""Parameter and input checks shared by every module.

Each check returns the clean value or raises a ``ValueError``/``TypeError``
whose message names the parameter, what it got and what would be accepted.
"""

from __future__ import annotations

import numbers
from collections.abc import Collection
from typing import Any

import numpy as np


def check_int(value: Any, name: str, low: int | None = 1, high: int | None = None) -> int:
    """``value`` as an int within ``[low, high]`` (a bool is not an int here)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int; got {value!r} ({type(value).__name__}).")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        if high is None:
            raise ValueError(f"{name} must be at least {low}; got {value}.")
        if low is None:
            raise ValueError(f"{name} must be at most {high}; got {value}.")
        raise ValueError(f"{name} must be between {low} and {high}; got {value}.")
    return value


def check_real(
    value: Any,
    name: str,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` as a finite float within the given bounds (open or closed)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not np.isfinite(float(value)):
        raise TypeError(f"{name} must be a finite number; got {value!r}.")
    value = float(value)
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        lo = "" if low is None else ("(" if low_open else "[") + f"{low}"
        hi = "" if high is None else f"{high}" + (")" if high_open else "]")
        where = (
            f"in {lo}, {hi}"
            if low is not None and high is not None
            else (f"{'>' if low_open else '>='} {low}" if low is not None else f"{'<' if high_open else '<='} {high}")
        )
        raise ValueError(f"{name} must be {where}; got {value}.")
    return value


def check_choice(value: Any, name: str, choices: Collection[Any]) -> Any:
    """``value`` if it is one of ``choices``."""
    if not isinstance(value, (str, type(None), bool, numbers.Number)) or value not in choices:
        shown = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {shown}; got {value!r}.")
    return value


def check_count(value: Any, n: int, name: str) -> int:
    """An int between 1 and ``n`` (a number of rows to pick from ``n``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int; got {type(value).__name__}.")
    if not 1 <= int(value) <= n:
        raise ValueError(f"{name}={value} must be between 1 and the number of rows ({n}).")
    return int(value)


def check_n_features(n_features: int, expected: int, owner: str, name: str = "X") -> None:
    """The width of new input against the width the model was fitted on.

    The message is scikit-learn's, so tools that parse it keep working.
    """
    if n_features != expected:
        raise ValueError(f"{name} has {n_features} features, but {owner} is expecting {expected} features as input.")


def check_landmark_span(m: int, n_components: int, fix: str) -> None:
    """Landmarks must outnumber the dimensions of the embedding they span."""
    if m <= n_components:
        raise ValueError(f"{m} landmarks cannot span n_components={n_components} dimensions: {fix}")


def check_block_finite(block: np.ndarray, first_row: int = 0) -> np.ndarray:
    """Raise if ``block`` holds NaN or infinity, naming the row in the whole array.

    A sum is NaN/Inf when any entry is; only then (or on overflow of huge
    finite values) is the element-wise test paid for.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        total = block.sum()
    if not np.isfinite(total):
        bad = ~np.isfinite(block)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            raise ValueError(
                f"Input contains NaN or infinity (first at row {first_row + int(row)}, column {int(col)}). "
                f"Remove or impute non-finite values before fitting, for example with numpy.nan_to_num "
                f"or a dask-ml imputer."
            )
    return block
