"""Every parameter of scikit-learn's counterpart class is accepted by bigdr's, and documented there."""

from __future__ import annotations

import inspect
import re

import pytest
import sklearn.decomposition as skd
import sklearn.manifold as skm
import sklearn.random_projection as skr

import bigdr

PAIRS = [
    (bigdr.PCA, skd.PCA),
    (bigdr.TruncatedSVD, skd.TruncatedSVD),
    (bigdr.KernelPCA, skd.KernelPCA),
    (bigdr.FactorAnalysis, skd.FactorAnalysis),
    (bigdr.FastICA, skd.FastICA),
    (bigdr.Isomap, skm.Isomap),
    (bigdr.LocallyLinearEmbedding, skm.LocallyLinearEmbedding),
    (bigdr.SpectralEmbedding, skm.SpectralEmbedding),
    (bigdr.ClassicalMDS, skm.ClassicalMDS),
    (bigdr.GaussianRandomProjection, skr.GaussianRandomProjection),
    (bigdr.SparseRandomProjection, skr.SparseRandomProjection),
]


def _parameters(cls: type) -> set[str]:
    return {name for name in inspect.signature(cls.__init__).parameters if name != "self"}


def _documented(cls: type) -> set[str]:
    """Names given an entry in the class docstring's Parameters section (``name : type`` lines)."""
    doc = inspect.getdoc(cls) or ""
    section = doc.split("Parameters\n----------", 1)[-1].split("Attributes\n----------", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        match = re.match(r"^([A-Za-z_][\w, ]*) :", line)
        if match:
            names |= {name.strip() for name in match.group(1).split(",")}
    return names


@pytest.mark.parametrize("ours, theirs", PAIRS, ids=[p[0].__name__ for p in PAIRS])
def test_every_scikit_learn_parameter_is_accepted_and_documented(ours, theirs):
    missing = _parameters(theirs) - _parameters(ours)
    assert not missing, f"{ours.__name__} lacks scikit-learn's {sorted(missing)}"
    undocumented = _parameters(theirs) - _documented(ours)
    assert not undocumented, f"{ours.__name__}'s docstring does not describe {sorted(undocumented)}"
    # A scikit-learn user's keyword arguments, at their own defaults, construct bigdr's estimator.
    defaults = {
        name: p.default
        for name, p in inspect.signature(theirs.__init__).parameters.items()
        if name != "self" and p.default is not inspect.Parameter.empty
    }
    model = ours(**defaults)
    assert set(defaults) <= set(model.get_params())
