"""The errors and warnings bigdr raises, in one place.

Every error is a ``ValueError`` or ``TypeError`` that names the problem and
the fix; warnings are subclasses of ``UserWarning`` so that one filter
(``warnings.simplefilter("error", bigdr.exceptions.BigdrWarning)``) can
turn all of them into errors.
"""

from __future__ import annotations

from sklearn.exceptions import ConvergenceWarning as _SklearnConvergenceWarning
from sklearn.exceptions import DataDimensionalityWarning as _SklearnDataDimensionalityWarning
from sklearn.exceptions import NotFittedError as _SklearnNotFittedError


class NotFittedError(_SklearnNotFittedError):
    """A method that needs a fitted estimator was called before ``fit``.

    A subclass of scikit-learn's ``NotFittedError`` (itself a ``ValueError``
    and an ``AttributeError``), so code written for scikit-learn catches it.
    """


class MemoryBudgetError(ValueError):
    """A fit's estimated peak memory exceeds the memory it may use (refused before any work)."""


class BigdrWarning(UserWarning):
    """Base class of bigdr's warnings."""


class DisconnectedGraphWarning(BigdrWarning):
    """The neighbourhood graph has more than one connected component."""


class NonEuclideanWarning(BigdrWarning):
    """The dissimilarities have fewer positive eigenvalues than components asked for."""


class DataDimensionalityWarning(BigdrWarning, _SklearnDataDimensionalityWarning):
    """More components than features: the projection cannot reduce the dimension.

    Also scikit-learn's ``DataDimensionalityWarning``, so its filters and tests catch it.
    """


class ConvergenceWarning(BigdrWarning, _SklearnConvergenceWarning):
    """An iterative solver stopped before reaching its tolerance.

    Also scikit-learn's ``ConvergenceWarning``, so ``warnings.filterwarnings(...,
    category=sklearn.exceptions.ConvergenceWarning)`` and scikit-learn's tests catch it.
    """


class ExtrapolationWarning(BigdrWarning):
    """Rows to embed lie far outside the data the model was fitted on; their coordinates are extrapolated."""


class SparseGraphWarning(BigdrWarning):
    """A sampled neighbour graph has too few rows for the dimension of the data's manifold."""


class RankSelectionWarning(BigdrWarning):
    """The assumptions of the rule that chose the number of components do not hold for these data."""


class GeneSelectionWarning(BigdrWarning):
    """An AnnData input flags highly variable genes (scanpy's ``var["highly_variable"]``) and every gene is used."""
