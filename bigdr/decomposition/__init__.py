"""Linear and kernel decompositions: PCA, truncated SVD, factor analysis, FastICA and kernel PCA.

As in scikit-learn, each estimator lives in a module of its own and is imported from here
(``from bigdr.decomposition import PCA``) or from ``bigdr``.
"""

from .factor_analysis import FactorAnalysis
from .ica import FastICA
from .kernel_pca import KernelPCA
from .pca import PCA
from .truncated_svd import TruncatedSVD

__all__ = ["PCA", "FactorAnalysis", "FastICA", "KernelPCA", "TruncatedSVD"]
