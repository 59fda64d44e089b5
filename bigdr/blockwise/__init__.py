"""Passes over the row blocks of a dask array, written as graphs.

:mod:`~bigdr.blockwise.reduce` (tree reductions of mergeable statistics),
:mod:`~bigdr.blockwise.linalg` (tall-skinny products and decompositions),
:mod:`~bigdr.blockwise.extension` (placing rows with a fitted model, block by block:
the out-of-sample step every method shares) and :mod:`~bigdr.blockwise.sampling`
(reproducible uniform samples and landmark selection in one pass).
"""
