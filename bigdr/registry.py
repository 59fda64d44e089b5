"""The one table of methods: command-line name -> estimator class, and what the front ends read of it.

Adding a method is one new module with its estimator and one line in
:data:`METHODS`. Everything else follows from the estimator itself: the
command line's options (``bigdr fit-transform --method NAME --help``) are its
``__init__`` parameters, with defaults from the signature and descriptions
from the numpydoc ``Parameters`` section (:func:`parameters`); what the
command line can draw or report is what the class declares
(``_capabilities``); persistence (:func:`bigdr.load`), the package namespace
(``bigdr.ClassName``) and the common test battery read the same table.
A parameter is spelled ``--n-neighbors`` for ``n_neighbors``, unless the
class gives another spelling in ``_cli_flags`` (``LocallyLinearEmbedding``'s
``method`` is ``--variant``, since ``--method`` chooses the method).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ._deprecated import RENAMED
from .base import BigdrEstimator


@dataclass(frozen=True)
class Method:
    """One row of the table."""

    name: str  #: the command line's ``--method`` value
    target: str  #: ``module:Class`` inside bigdr, imported on first use
    summary: str  #: one line for ``bigdr fit-transform --help``

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
        Method(
            "truncated-svd",
            "decomposition.truncated_svd:TruncatedSVD",
            "truncated SVD / latent semantic analysis, not centred: sparse data stay sparse",
        ),
        Method("classical-mds", "manifold.mds:ClassicalMDS", "classical MDS (PCA for euclidean features)"),
        Method("landmark-mds", "manifold.mds:LandmarkMDS", "landmark MDS and triangulation"),
        Method("isomap", "manifold.isomap:Isomap", "Isomap: exact, landmarks, or a sampled graph"),
        Method("diffusion-map", "manifold.diffusion_map:DiffusionMap", "diffusion map with Nystrom extension"),
        Method(
            "spectral-embedding",
            "manifold.spectral_embedding:SpectralEmbedding",
            "Laplacian eigenmaps with Nystrom extension",
        ),
        Method(
            "kernel-pca",
            "decomposition.kernel_pca:KernelPCA",
            "kernel PCA: exact, Nystrom or random Fourier features",
        ),
        Method(
            "lle",
            "manifold.lle:LocallyLinearEmbedding",
            "locally linear embedding (standard, modified, hessian, ltsa): all rows or landmarks",
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
            "ridge",
            "curves.density_ridge:DensityRidge",
            "density ridges (filaments) by SCMS: each row's point on the ridge",
        ),
        Method("gaussian-rp", "random_projection:GaussianRandomProjection", "Gaussian random projection"),
        Method("sparse-rp", "random_projection:SparseRandomProjection", "sparse random projection"),
    )
}


@dataclass(frozen=True)
class Parameter:
    """One parameter of an estimator as its signature and its numpydoc ``Parameters`` section give it."""

    name: str  #: the Python name
    flag: str  #: the command line's option, ``--n-neighbors`` (or the estimator's own spelling)
    default: Any
    kind: str  #: the numpydoc type line, ``{"auto", "dense"}`` or ``int or None``
    description: str  #: its description, as plain text

    @property
    def option(self) -> str:
        """The command line's name for it in the parsed arguments: ``--n-neighbors`` -> ``n_neighbors``."""
        return self.flag[2:].replace("-", "_")

    @property
    def summary(self) -> str:
        """The description's first sentence."""
        return first_sentence(self.description)

    @property
    def choices(self) -> tuple[Any, ...] | None:
        """The values of a ``{"a", "b", None}`` type line, else None."""
        m = re.fullmatch(r"\{([^}]*)\}", self.kind.strip())
        if not m:
            return None
        return tuple(None if v.strip() == "None" else v.strip().strip("\"'") for v in m.group(1).split(","))

    @property
    def on_command_line(self) -> bool:
        """Whether a value can be spelled as text (arrays and callables only: no)."""
        return not re.match(r"(nd)?array|array-like|callable", self.kind.strip())


def parameter_docs(cls: type) -> dict[str, tuple[str, str]]:
    """``name -> (type line, description)`` from the numpydoc ``Parameters`` sections of ``cls`` and its bases.

    A class documents its own parameters; one it inherits unchanged may be
    described by the base class (``SpectralEmbedding`` by ``DiffusionMap``).
    Entries naming several parameters (``degree, coef0 : float``) describe each.
    """
    found: dict[str, tuple[str, str]] = {}
    for klass in cls.__mro__:
        doc = inspect.cleandoc(klass.__dict__.get("__doc__") or "")
        section = re.search(r"^Parameters\n-{3,}\n(.*?)(?=^\S[^\n]*\n-{3,}\n|\Z)", doc, re.S | re.M)
        if not section:
            continue
        entries = re.findall(r"^(\S[^\n]*)\n((?:[ \t]+[^\n]*\n?|\n(?=[ \t]))*)", section.group(1), re.M)
        for head, body in entries:
            names, _, kind = head.partition(" : ")
            sentence = plain(body)
            for name in (n.strip() for n in names.split(",")):
                found.setdefault(name, (kind.strip(), sentence))
    return found


def plain(text: str) -> str:
    """A numpydoc description as one line of plain text (roles and literals unmarked)."""
    text = " ".join(text.split())
    text = re.sub(r":\w+:`~?(?:[\w.]*\.)?([^`<]+?)(?: <[^>]*>)?`", r"\1", text)  # :func:`bigdr.a.f` -> f
    return text.replace("``", "")


def first_sentence(text: str) -> str:
    """The first sentence of a plain-text description."""
    depth = 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1, "[": 1, "]": -1}.get(ch, 0)
        if ch in ".;" and depth <= 0 and (i + 1 == len(text) or text[i + 1] == " ") and not text[:i].endswith("e.g"):
            return text[:i]
    return text


#: parameters() by class: the command line reads them for every method when it builds its parser
#: and again when it words a message.
_PARAMETERS: dict[type, tuple[Parameter, ...]] = {}


def parameters(cls: type[BigdrEstimator]) -> tuple[Parameter, ...]:
    """The parameters of ``cls`` in signature order, documented; a missing entry is an error."""
    if cls not in _PARAMETERS:
        _PARAMETERS[cls] = _read_parameters(cls)
    return _PARAMETERS[cls]


def _read_parameters(cls: type[BigdrEstimator]) -> tuple[Parameter, ...]:
    docs = parameter_docs(cls)
    flags = getattr(cls, "_cli_flags", {})
    out = []
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name not in docs:
            raise TypeError(f"{cls.__name__}'s docstring does not describe the parameter {p.name!r}.")
        kind, sentence = docs[p.name]
        flag = "--" + flags.get(p.name, p.name).replace("_", "-")
        out.append(Parameter(p.name, flag, p.default, kind, sentence))
    return tuple(out)


def import_all() -> dict[str, type[BigdrEstimator]]:
    """Every estimator class by class name."""
    return {m.cls.__name__: m.cls for m in METHODS.values()}


def saved_class(name: str) -> type[BigdrEstimator] | None:
    """The class of a saved model's class name, also the names earlier releases saved; None if unknown."""
    return import_all().get(RENAMED.get(name, name))


def method_of(estimator: BigdrEstimator) -> str:
    """The command-line name of an estimator's method."""
    for m in METHODS.values():
        if m.cls is type(estimator):
            return m.name
    raise ValueError(f"{type(estimator).__name__} has no command-line method.")


def with_capability(capability: str) -> list[str]:
    """The methods whose estimator declares ``capability`` (:attr:`BigdrEstimator._capabilities`)."""
    return [m.name for m in METHODS.values() if capability in m.cls._capabilities]


def suggest(word: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for a near miss among ``known``, else ``""``."""
    close = difflib.get_close_matches(str(word), [str(k) for k in known], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def make_estimator(method: str, options: dict[str, Any]) -> BigdrEstimator:
    """The estimator of ``method`` with the given command-line options (keyed by flag, ``n_neighbors``).

    Raises a ValueError naming the methods that take an option the chosen
    method does not have, or the values a choice parameter takes.
    """
    if method not in METHODS:
        raise ValueError(f"Unknown method {method!r}{suggest(method, METHODS)}; choose one of {', '.join(METHODS)}.")
    cls = METHODS[method].cls
    by_flag = {p.option: p for p in parameters(cls)}
    params = {}
    for option, value in options.items():
        if option not in by_flag:
            takers = [m.name for m in METHODS.values() if option in {p.option for p in parameters(m.cls)}]
            flag = "--" + option.replace("_", "-")
            raise ValueError(f"{flag} applies to --method {', '.join(takers) or '(none)'}, not {method}.")
        p = by_flag[option]
        if p.choices is not None and value not in p.choices:
            shown = ", ".join("none" if c is None else str(c) for c in p.choices)
            raise ValueError(f"{p.flag} {value}: {method} takes one of {shown}{suggest(value, p.choices)}.")
        params[p.name] = value
    return cls(**params)
