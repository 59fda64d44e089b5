"""Kernels on in-memory numpy blocks: no dask here, so each is easy to test
against a textbook formula. :mod:`~bigdr.core.stats` (mergeable statistics),
:mod:`~bigdr.core.eigen` (eigensolvers), :mod:`~bigdr.core.sparse_eigen`
(the smallest pairs of sparse Laplacians), :mod:`~bigdr.core.distances`,
:mod:`~bigdr.core.triangulation` (landmark MDS, Nystrom placement) and
:mod:`~bigdr.core.spectrum` (Marchenko-Pastur, choosing k)."""
