import dask
import pytest

from bigdr.scheduler import ENV, default_spec, use_scheduler


def test_threads_by_default_and_from_the_environment(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert default_spec() == "threads"
    monkeypatch.setenv(ENV, "sync")
    with use_scheduler() as client:
        assert client is None
        assert dask.config.get("scheduler") == "sync"


def test_unknown_spec_names_the_choices():
    with pytest.raises(ValueError, match="'threads', 'local-cluster', an address"):
        with use_scheduler("no-such-thing"):
            pass


def test_unreachable_scheduler_is_a_clear_error():
    with pytest.raises(ValueError, match="Cannot reach the dask scheduler.*Is it running"):
        with use_scheduler("tcp://127.0.0.1:9"):
            pass
