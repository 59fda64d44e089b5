"""bigdr.runtime.memory: estimates by part and phase, the limit, the refusal."""

import dask
import numpy as np
import pytest

import bigdr
from bigdr.exceptions import MemoryBudgetError
from bigdr.runtime.memory import OVERHEAD, MemoryEstimate, Part, check_memory, format_bytes, memory_limit


def test_phases_do_not_add_up_but_held_parts_do():
    est = MemoryEstimate(
        "M",
        {
            "held": Part(100, "held", "a"),
            "read": Part(30, "read", "", "pass 1"),
            "also": Part(50, "also", "", "pass 1"),
            "place": Part(70, "place", "b", "pass 2"),
        },
    )
    assert est.total == OVERHEAD + 100 + 80
    assert est.largest().param == "a"


@pytest.mark.parametrize("setting, expected", [("2GiB", 2 * 2**30), ("512MB", 512 * 10**6), ("none", None)])
def test_limit_from_config(setting, expected):
    with dask.config.set({"bigdr.memory-limit": setting}):
        assert memory_limit()[0] == expected


def test_auto_limit_is_the_available_memory():
    import psutil

    limit, source = memory_limit()
    assert source == "available memory" and 0 < limit <= psutil.virtual_memory().total


def test_bad_limit_is_a_clear_error():
    with dask.config.set({"bigdr.memory-limit": "lots"}), pytest.raises(ValueError, match="8GiB"):
        memory_limit()


def test_refusal_names_the_largest_part_and_its_parameter():
    est = MemoryEstimate("Isomap", {"graph": Part(3 * 2**30, "the neighbour graph", "n_neighbors")})
    with dask.config.set({"bigdr.memory-limit": "1GiB"}), pytest.raises(MemoryBudgetError) as caught:
        check_memory(est)
    text = str(caught.value)
    assert "lower n_neighbors" in text and "3.1 GiB" in text and "memory-limit" in text
    with dask.config.set({"bigdr.memory-limit": "none"}):
        check_memory(est)


def test_format_bytes():
    assert format_bytes(1536 * 2**20) == "1.5 GiB" and format_bytes(10) == "10 B"


@pytest.mark.parametrize(
    "model",
    [
        bigdr.PCA(2),
        bigdr.ClassicalMDS(2),
        bigdr.LandmarkMDS(2),
        bigdr.Isomap(2),
        bigdr.DiffusionMap(2),
        bigdr.SpectralEmbedding(2),
        bigdr.GaussianRandomProjection(2),
        bigdr.SparseRandomProjection(2),
    ],
    ids=lambda m: type(m).__name__,
)
def test_every_estimator_estimates_and_grows_with_the_data(model):
    small = model.estimate_memory(np.zeros((5_000, 8))).total
    large = model.estimate_memory(np.zeros((400_000, 8))).total
    assert OVERHEAD < small <= large


def test_graph_estimate_is_linear_in_the_neighbour_count():
    X = np.zeros((20_000, 3))
    a = bigdr.Isomap(n_neighbors=1000).estimate_memory(X).parts["graph"].bytes
    b = bigdr.Isomap(n_neighbors=4000).estimate_memory(X).parts["graph"].bytes
    assert b == 4 * a


def test_blocks_in_flight_and_merge_states_are_capped_by_the_blocks_there_are():
    import scipy.sparse as sp

    from bigdr.blockwise.reduce import MERGE_STATES, merged_bytes
    from bigdr.runtime.memory import streaming

    assert merged_bytes(100, 10) == MERGE_STATES * 100 * 10 * 8
    assert merged_bytes(100, 10, blocks=2) == 3 * 100 * 10 * 8  # two leaves and their merge
    assert merged_bytes(100, 10, blocks=1_000) == merged_bytes(100, 10)
    assert streaming(1000, 2, blocks=1).bytes == 1000
    assert streaming(1000, 2, blocks=1_000).bytes == streaming(1000, 2).bytes
    one_block = sp.random(1_000, 500, density=0.01, format="csr", random_state=0)
    many = sp.vstack([one_block] * 2_000).tocsr()  # 10M nonzeros: two row blocks
    few, lots = (bigdr.TruncatedSVD(100).estimate_memory(M).parts for M in (one_block, many))
    assert few["sketch"].bytes == merged_bytes(500, 110, blocks=1) < lots["sketch"].bytes
    assert few["stream"].bytes < lots["stream"].bytes


def test_driver_memory_is_not_held_to_the_workers_limit():
    """A part held by this process (a partitioned fit's eigensolver) is compared with this machine's memory."""
    from distributed import Client, LocalCluster

    est = MemoryEstimate("DiffusionMap", {"eigen": Part(2 * 2**30, "the eigensolver's blocks", "n_components")})
    with (
        LocalCluster(n_workers=1, threads_per_worker=1, memory_limit="1GiB", dashboard_address=":0") as cluster,
        Client(cluster) as client,
        client.as_current(),
    ):
        assert memory_limit() == (2**30, "the smallest worker's memory limit")
        with pytest.raises(MemoryBudgetError, match="smallest worker"):
            check_memory(est)
        assert memory_limit(in_driver=True)[1] == "available memory"
        check_memory(est, in_driver=True)
