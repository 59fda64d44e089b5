"""How dask graphs run: :mod:`~bigdr.runtime.compute` (one place that runs a graph, with BLAS
capped per thread and progress), :mod:`~bigdr.runtime.scheduler` (threads, a local cluster or an
existing one) and :mod:`~bigdr.runtime.memory` (the peak memory a fit will need, checked before
its first pass)."""
