"""Neighbour graphs and the geometry built on them.

:mod:`~bigdr.graph.neighbors` (one index interface, one class per search back
end), :mod:`~bigdr.graph.knn` (kNN graphs of all rows), :mod:`~bigdr.graph.sparse`
(CSR graphs, components and the disconnected-graph policy, landmark
geodesics), :mod:`~bigdr.graph.affinity` (kernels), :mod:`~bigdr.graph.operators`
(Markov matrices and Laplacians) and :mod:`~bigdr.graph.landmarks` (one-pass
landmark selection).
"""

from .knn import KNNGraph, knn_graph
from .landmarks import select_landmarks
from .neighbors import NeighborIndex

__all__ = ["KNNGraph", "NeighborIndex", "knn_graph", "select_landmarks"]
