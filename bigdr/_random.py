"""Randomness that ignores chunking and scheduling.

A draw that belongs to a logical block (rows ``b * B .. (b + 1) * B``, a
block of features, a landmark group) comes from
``numpy.random.default_rng([seed, block, stream])``: the same numbers
whichever chunk or worker asks for them, in whatever order. ``stream`` is a
salt per purpose; seeding a purpose like a data generator (``[seed,
block]``) once made the "uniform" sample of a generated swiss roll its
smallest roll angles.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: Stream salts, one per purpose (ASCII of a short name).
LANDMARK_STREAM = 0x6269_6764_726C_6D6B  # "bigdrlmk": row keys of the uniform sample
PROJECTION_STREAM = 0x6269_6764_7270_726A  # "bigdrprj": random projection matrices


def resolve_seed(random_state: Any, name: str = "random_state") -> int:
    """The integer seed a fit uses: ``random_state`` itself, or one drawn now (None, a Generator or
    a ``RandomState``, as scikit-learn's ``check_random_state`` takes).

    Estimators store the result as ``seed_`` so that a model fitted with
    ``random_state=None`` can be reproduced. A generator passed in advances,
    so two fits with the same object differ, as in scikit-learn.
    """
    if random_state is None:
        return int(np.random.default_rng().integers(2**63))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**63))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)) or random_state < 0:
        raise ValueError(
            f"{name} must be a non-negative int, None, a numpy Generator or RandomState; got {random_state!r}."
        )
    return int(random_state)


def block_rng(seed: int, block: int, stream: int) -> np.random.Generator:
    """The generator of logical block ``block`` for one purpose (``stream``)."""
    return np.random.default_rng([int(seed), int(block), int(stream)])


def as_generator(random_state: Any) -> np.random.Generator:
    """A numpy Generator from None, an int, a Generator or a RandomState (for draws made in the driver)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(resolve_seed(random_state))
    if random_state is None or (isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool)):
        return np.random.default_rng(random_state)
    raise TypeError(
        f"random_state must be None, an int, a numpy Generator or RandomState; got {type(random_state).__name__}."
    )
