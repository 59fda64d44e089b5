"""The table of methods: command-line name -> estimator class.

Adding a method is one new module with its estimator and one line here;
the command line (``bigdr fit-transform --method NAME``), persistence
(:func:`bigdr.load`), the package namespace (``bigdr.ClassName``) and the
common test battery all read this table. Command-line options map to the
estimator's parameters of the same name (``--n-neighbors`` sets
``n_neighbors``), or to the name given in ``aliases``; an option the
estimator does not have is an error that names the methods that take it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from .base import BigdrEstimator


@dataclass(frozen=True)
class Method:
    """One row of the table."""

    name: str  #: the command line's ``--method`` value
    target: str  #: ``module:Class`` inside bigdr, imported on first use
    summary: str  #: one line for ``bigdr fit-transform --help``
    aliases: dict[str, str] = field(default_factory=dict)  #: command-line option -> parameter name

    @property
    def cls(self) -> type[BigdrEstimator]:
        module, name = self.target.split(":")
        return getattr(importlib.import_module(f"bigdr.{module}"), name)


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("pca", "decomposition.pca:PCA", "principal component analysis in one pass"),
        Method(
            "factor-analysis",
            "decomposition.factor_analysis:FactorAnalysis",
            "maximum-likelihood factor analysis in one pass",
        ),
        Method("ica", "decomposition.ica:FastICA", "FastICA: one pass to whiten, one pass per iteration"),
        Method("classical-mds", "manifold.mds:ClassicalMDS", "classical MDS (PCA for euclidean features)"),
        Method(
            "landmark-mds", "manifold.mds:LandmarkMDS", "landmark MDS and triangulation", {"landmarks": "n_landmarks"}
        ),
        Method("isomap", "manifold.isomap:Isomap", "Isomap: exact, landmarks, or a sampled graph"),
        Method("diffusion-map", "manifold.spectral:DiffusionMap", "diffusion map with Nystrom extension"),
        Method(
            "spectral-embedding", "manifold.spectral:SpectralEmbedding", "Laplacian eigenmaps with Nystrom extension"
        ),
        Method(
            "kernel-pca",
            "decomposition.kernel_pca:KernelPCA",
            "kernel PCA: exact, Nystrom or random Fourier features",
            {"approximation": "method", "landmarks": "n_landmarks"},
        ),
        Method(
            "lle",
            "manifold.lle:LocallyLinearEmbedding",
            "locally linear embedding (standard, modified, hessian, ltsa): all rows or landmarks",
            {"variant": "method"},
        ),
        Method(
            "principal-curve",
            "curves.principal_curve:PrincipalCurve",
            "regularized principal curve: one pass per iteration; each row's latent coordinate",
        ),
        Method(
            "principal-manifold",
            "curves.principal_curve:PrincipalManifold",
            "regularized principal manifold (two latent dimensions): one pass per iteration",
        ),
        Method(
            "hastie-stuetzle",
            "curves.hastie_stuetzle:HastieStuetzleCurve",
            "Hastie-Stuetzle principal curve (polyline and smoother): one pass per iteration",
        ),
        Method(
            "ridge", "curves.ridge:RidgeEstimator", "density ridges (filaments) by SCMS: each row's point on the ridge"
        ),
        Method("gaussian-rp", "random_projection:GaussianRandomProjection", "Gaussian random projection"),
        Method("sparse-rp", "random_projection:SparseRandomProjection", "sparse random projection"),
    )
}


def import_all() -> dict[str, type[BigdrEstimator]]:
    """Every method's class by class name (importing their modules registers them)."""
    return {m.cls.__name__: m.cls for m in METHODS.values()}


def method_of(estimator: BigdrEstimator) -> str:
    """The command-line name of an estimator's method."""
    for m in METHODS.values():
        if m.target.endswith(f":{type(estimator).__name__}"):
            return m.name
    raise ValueError(f"{type(estimator).__name__} has no command-line method.")


def make_estimator(method: str, options: dict[str, Any]) -> BigdrEstimator:
    """The estimator of ``method`` with the given command-line options.

    Raises a ValueError naming the methods that take an option the chosen
    method does not have.
    """
    if method not in METHODS:
        raise ValueError(f"Unknown method {method!r}; choose one of {', '.join(METHODS)}.")
    row = METHODS[method]
    cls = row.cls
    names = set(cls().get_params())
    params = {}
    for option, value in options.items():
        param = row.aliases.get(option, option)
        if param not in names:
            takers = [m.name for m in METHODS.values() if m.aliases.get(option, option) in m.cls().get_params()]
            flag = "--" + option.replace("_", "-")
            raise ValueError(f"{flag} applies to --method {', '.join(takers) or '(none)'}, not {method}.")
        params[param] = value
    return cls(**params)
