"""Neighbour graphs and the geometry built on them.

:mod:`~bigdr.graph.neighbors` (one index interface, one class per search back
end), :mod:`~bigdr.graph.knn` (kNN graphs of all rows), :mod:`~bigdr.graph.sparse`
(CSR graphs, components and the disconnected-graph policy, landmark
geodesics), :mod:`~bigdr.graph.affinity` (kernels), :mod:`~bigdr.graph.operators`
(Markov matrices and Laplacians) and :mod:`~bigdr.blockwise.sampling` (one-pass
landmark selection).
"""

from ..blockwise.sampling import select_landmarks  # re-exported: the graphs are built on landmarks
from .knn import KNNGraph, knn_graph
from .neighbors import NeighborIndex

__all__ = ["KNNGraph", "NeighborIndex", "knn_graph", "select_landmarks"]
