"""Shared benchmark plumbing: machine description, child processes, RSS, results.

Each measurement runs in a fresh Python process so that its peak resident
memory is its own and nothing (page cache aside) carries over. Rounds are
interleaved across methods, so ratios come from one run on the same machine
state; medians over rounds are reported.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DATA = HERE / "data"


def machine() -> dict:
    import dask
    import numpy
    import sklearn
    import zarr

    info = {
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "dask": dask.__version__,
        "zarr": zarr.__version__,
        "scikit-learn": sklearn.__version__,
    }
    try:
        import dask_ml

        info["dask-ml"] = dask_ml.__version__
    except ImportError:
        pass
    import bigdr

    info["bigdr"] = bigdr.__version__
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    try:
        from threadpoolctl import threadpool_info

        blas = sorted({f"{i['internal_api']} {i['version']}" for i in threadpool_info() if i["user_api"] == "blas"})
    except Exception:
        blas = []
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "memory_gib": round(mem, 1),
        "blas": blas,
        "os": platform.platform(),
        "versions": info,
    }


class PeakRSS:
    """Sample this process's RSS every 10 ms while the block runs."""

    def __enter__(self):
        import psutil

        self._proc = psutil.Process()
        self.peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self._proc.memory_info().rss)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._proc.memory_info().rss)


class WorkerPeakRSS:
    """Sample the RSS of every worker of a ``distributed.Client`` every 0.5 s while the block runs.

    ``peaks_mib``: the peak of each worker, ascending.
    """

    def __init__(self, client):
        self.client = client
        self.peaks: dict = {}

    def __enter__(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        import psutil

        while not self._stop.wait(0.5):
            try:
                for w, rss in self.client.run(lambda: psutil.Process().memory_info().rss).items():
                    self.peaks[w] = max(self.peaks.get(w, 0), rss)
            except Exception:  # a worker restarting: keep sampling the others
                pass

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    @property
    def peaks_mib(self) -> list[float]:
        return sorted(v / 2**20 for v in self.peaks.values())


def run_with_empty_numba_cache(script: Path, *args: str) -> dict:
    """:func:`run_child` with ``NUMBA_CACHE_DIR`` a new empty directory (first use pays compilation)."""
    cache = Path(tempfile.mkdtemp(prefix="numba-cache-"))
    try:
        return run_child(script, *args, env={"NUMBA_CACHE_DIR": str(cache)})
    finally:
        shutil.rmtree(cache)


def process_peak_mib() -> float:
    """Peak RSS of this process since it started its program (the kernel's ``VmHWM``), in MiB.

    Not ``getrusage``'s ``ru_maxrss``: Linux carries that over fork and exec, so a child
    started by a parent that had already peaked higher reports the parent's peak (each
    100k-cell child run after the 1M-cell ones reported 1.22 GiB).
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:  # no procfs (not Linux): the rusage figure, which there is per process
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_child(script: Path, *args: str, env: dict | None = None, timeout: float = 3600) -> dict:
    """Run ``script child ARGS`` in a new process and parse its last JSON line."""
    proc = subprocess.run(
        [sys.executable, str(script), "child", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child {args} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def read_pass(path) -> float:
    """A plain dask read of every block of the store at ``path`` (decompressed, then dropped): the baseline pass."""
    import numpy as np

    import bigdr

    X = bigdr.as_array(str(path), check_finite=False)
    return X.map_blocks(lambda b: np.zeros((1, 1)), chunks=(1, 1), dtype=float).sum().compute()


def drop_page_cache() -> bool:
    """Drop the OS page cache (root only) so the next read comes from disk."""
    try:
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


def timed(fn, repeats: int = 1):
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return times, result


def write_results(name: str, payload: dict, markdown: str) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2, default=float) + "\n")
    m = payload["machine"]
    header = (
        f"# {name} benchmark\n\nRun {payload['date']} on {m['cpu']}, {m['cpus']} vCPU, "
        f"{m['memory_gib']} GiB RAM, {', '.join(m['blas'])}; "
        + ", ".join(f"{k} {v}" for k, v in m["versions"].items())
        + ".\n\n"
    )
    (RESULTS / f"{name}.md").write_text(header + markdown)


def stamped(markdown: str) -> str:
    """A section's markdown with the date and processor of its run: sections of one file may come from
    different runs (and machines), while the file's header names the latest."""
    import datetime

    return f"{markdown.rstrip()}\n\n_Section run {datetime.date.today().isoformat()} on {machine()['cpu']}._\n"


def run_sections(name: str, runners: dict, selected: list[str] | str) -> None:
    """Run the selected ``runners`` (each returns ``(json, markdown)``) and update ``results/<name>.*``.

    Sections not run this time keep their previous results, so one case can
    be re-run without repeating the others. ``selected`` may be one name: the
    scripts' default is the string ``"all"``, as argparse checks a list default
    against ``choices`` as a whole and refuses it.
    """
    import datetime

    selected = [selected] if isinstance(selected, str) else selected

    DATA.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    previous = json.loads(path.read_text()) if path.exists() else {}
    payload = {"date": datetime.date.today().isoformat(), "machine": machine(), **{k: previous.get(k) for k in runners}}
    sections = dict(previous.get("_markdown", {}))
    for key, fn in runners.items():
        if key in selected or "all" in selected:
            payload[key], markdown = fn()
            sections[key] = stamped(markdown)
    payload["_markdown"] = sections
    write_results(name, payload, "\n".join(sections[k] for k in runners if k in sections))


def swiss_roll_store(n: int) -> Path:
    """The shared on-disk swiss roll of ``n`` rows (noise 0.05, seed 0), generated once."""
    from bigdr.datasets import generate

    store = DATA / f"swissroll-{n // 1_000_000}M.zarr"
    if not store.exists():
        generate("swiss-roll", store, n, noise=0.05, seed=0)
    return store


def embed_store(model, store) -> dict:
    """Fit ``model`` on ``<store>/X`` and write every row's embedding to a temporary zarr store; fresh process.

    Returns the timings, the peak RSS (taken before the embedding is read back for
    scoring, which loads all n rows), the embedding and the store's ``coords[:, 0]``.
    """
    import shutil
    import tempfile

    import dask.array as da
    import numpy as np

    import bigdr
    from bigdr.io import open_zarr

    out = Path(tempfile.mkdtemp(dir=DATA)) / "embedding.zarr"
    with PeakRSS() as rss:
        t0 = time.perf_counter()
        Y = model.fit_transform(f"{store}/X")  # the array inside the generated group, as a user would pass it
        fit_s = time.perf_counter() - t0
        bigdr.write_zarr(Y, out)
        total = time.perf_counter() - t0
    job_maxrss = process_peak_mib()
    embedding = np.asarray(da.from_zarr(open_zarr(str(out))).compute())
    truth = da.from_zarr(open_zarr(store, dataset="coords"))[:, 0].compute()
    shutil.rmtree(out.parent)
    return {
        "seconds": total,
        "fit_seconds": fit_s,
        "embed_write_seconds": total - fit_s,
        "peak_rss_mib": rss.peak / 2**20,
        "ru_maxrss_mib": job_maxrss,
        "embedding": embedding,
        "truth": truth,
    }
