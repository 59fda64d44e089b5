"""Real clusters: a dask scheduler and worker processes started here on 127.0.0.1.

Every process a test starts is stopped by its fixture, also when the test fails.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import zarr

import bigdr
from bigdr.cli import main
from bigdr.io import DONE_DIR, partial_path

PY = sys.executable


def _start(args, log):
    return subprocess.Popen([PY, "-m", *args], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def _stop(procs):
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _wait_for(path: Path, timeout=60):
    t0 = time.time()
    while not path.exists():
        if time.time() - t0 > timeout:
            raise TimeoutError(f"{path} did not appear")
        time.sleep(0.1)


class Cluster:
    def __init__(self, root: Path, n_workers=2, memory_limit="2GiB", tls=None):
        self.root = root
        self.scheduler_file = root / "scheduler.json"
        self.log = open(root / "cluster.log", "w")
        tls_args = []
        if tls:
            tls_args = ["--tls-ca-file", tls["ca"], "--tls-cert", tls["cert"], "--tls-key", tls["key"]]
        self.procs = [
            _start(
                [
                    "distributed.cli.dask_scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--no-dashboard",
                    "--scheduler-file",
                    str(self.scheduler_file),
                ]
                + (["--protocol", "tls"] if tls else [])
                + tls_args,
                self.log,
            )
        ]
        _wait_for(self.scheduler_file)
        self.address = json.loads(self.scheduler_file.read_text())["address"]
        for _ in range(n_workers):
            self.procs.append(
                _start(
                    [
                        "distributed.cli.dask_worker",
                        self.address,
                        "--nthreads",
                        "1",
                        "--memory-limit",
                        memory_limit,
                        "--no-dashboard",
                        "--host",
                        "127.0.0.1",
                    ]
                    + tls_args,
                    self.log,
                )
            )

    def close(self):
        _stop(self.procs)
        self.log.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from distributed import Client

    c = Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        with Client(scheduler_file=str(c.scheduler_file), timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
            c.client = client
            yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("stores")
    assert (
        main(
            [
                "generate",
                "spiked",
                str(root / "spiked.zarr"),
                "-n",
                "400000",
                "-p",
                "20",
                "--seed",
                "1",
                "--chunk-rows",
                "20000",
            ]
        )
        == 0
    )
    assert main(["generate", "swiss-roll", str(root / "roll.zarr"), "-n", "60000", "--noise", "0.05"]) == 0
    return root


def _transitions(client):
    return client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.transition_counter)


@pytest.mark.parametrize(
    "argv",
    [
        ["--method", "pca", "-k", "3"],
        ["--method", "gaussian-rp", "-k", "8"],
        ["--method", "isomap", "--landmarks", "64", "--max-samples", "5000"],
    ],
)
def test_cli_on_the_cluster_equals_the_local_run(cluster, stores, tmp_path, argv):
    data = str(stores / ("roll.zarr" if "isomap" in argv else "spiked.zarr"))
    base = ["fit-transform", data, "--dataset", "X", *argv]
    before = _transitions(cluster.client)
    assert (
        main([base[0], base[1], str(tmp_path / "remote.zarr"), *base[2:], "--scheduler", str(cluster.scheduler_file)])
        == 0
    )
    assert _transitions(cluster.client) > before + 10  # the work ran as tasks on that scheduler
    assert main([base[0], base[1], str(tmp_path / "local.zarr"), *base[2:]]) == 0
    remote, local = zarr.open(str(tmp_path / "remote.zarr"))[:], zarr.open(str(tmp_path / "local.zarr"))[:]
    np.testing.assert_allclose(remote, local, rtol=1e-9, atol=1e-9 * np.abs(local).max())


def test_worker_killed_mid_run_the_job_still_correct(cluster, stores, tmp_path):
    data = str(stores / "spiked.zarr")
    out = tmp_path / "killed.zarr"
    argv = [
        "fit-transform",
        data,
        str(out),
        "--dataset",
        "X",
        "-k",
        "3",
        "--chunk-mib",
        "0.5",
        "--scheduler",
        str(cluster.scheduler_file),
        "--no-progress",
    ]
    pids = sorted(cluster.client.run(os.getpid).values())
    run = subprocess.Popen([PY, "-m", "bigdr.cli", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    done_dir = partial_path(out) / DONE_DIR
    t0 = time.time()
    while not (done_dir.exists() and any(f.name.isdigit() for f in done_dir.iterdir())):
        assert run.poll() is None, run.stderr.read().decode()
        assert time.time() - t0 < 120
        time.sleep(0.02)
    os.kill(pids[0], signal.SIGKILL)  # mid-write: blocks are being computed and written
    stdout, stderr = run.communicate(timeout=300)
    assert run.returncode == 0, stderr.decode()
    assert not partial_path(out).exists()
    local = tmp_path / "local.zarr"
    assert main(["fit-transform", data, str(local), "--dataset", "X", "-k", "3"]) == 0
    np.testing.assert_allclose(zarr.open(str(out))[:], zarr.open(str(local))[:], atol=1e-9)
    cluster.client.wait_for_workers(2, timeout=60)  # the nanny replaced the killed worker
    assert pids[0] not in cluster.client.run(os.getpid).values()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_interrupted_write_resumes_to_an_identical_store(stores, tmp_path, sig):
    data = str(stores / "spiked.zarr")
    argv = ["fit-transform", data, None, "--dataset", "X", "-k", "3", "--chunk-mib", "0.25", "--no-progress"]
    whole, cut = tmp_path / "whole.zarr", tmp_path / "cut.zarr"
    assert main([a if a else str(whole) for a in argv]) == 0
    run = subprocess.Popen(
        [PY, "-m", "bigdr.cli", *[a if a else str(cut) for a in argv]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # SIGINT as in a terminal: a shell's background job (CI runners, nohup) inherits it ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    done_dir = partial_path(cut) / DONE_DIR
    t0 = time.time()
    while not (done_dir.exists() and sum(f.name.isdigit() for f in done_dir.iterdir()) >= 5):
        assert run.poll() is None and time.time() - t0 < 120
        time.sleep(0.01)
    run.send_signal(sig)
    _, stderr = run.communicate(timeout=60)
    assert run.returncode != 0 and not cut.exists()
    if sig == signal.SIGINT:
        assert b"--resume" in stderr and b"Traceback" not in stderr
    done = sorted(int(f.name) for f in done_dir.iterdir() if f.name.isdigit())
    assert 5 <= len(done)
    chunk_file = partial_path(cut) / "c" / str(done[0] // zarr.open(str(whole)).chunks[0]) / "0"
    stamp = chunk_file.stat().st_mtime_ns
    assert main([a if a else str(cut) for a in argv] + ["--resume"]) == 0
    assert not partial_path(cut).exists()
    a, b = zarr.open(str(whole)), zarr.open(str(cut))
    np.testing.assert_array_equal(a[:], b[:])
    assert dict(a.attrs) == dict(b.attrs) and a.chunks == b.chunks
    # Resuming wrote only the missing blocks: a block written before the cut was left alone.
    assert (cut / "c" / str(done[0] // a.chunks[0]) / "0").stat().st_mtime_ns == stamp


def test_resume_refuses_a_partial_store_of_another_run(stores, tmp_path, capsys):
    data = str(stores / "spiked.zarr")
    out = tmp_path / "o.zarr"
    part = partial_path(out)
    part.mkdir()
    (part / DONE_DIR).mkdir()
    (part / DONE_DIR / "fingerprint").write_text("something else")
    assert main(["fit-transform", data, str(out), "--dataset", "X", "--resume"]) == 2
    assert "different run" in capsys.readouterr().err


def _write_tls_files(root: Path) -> dict:
    from distributed.security import Security

    sec = Security.temporary()  # a fresh self-signed CA and certificate (PEM text)
    files = {}
    for name, pem in (("ca", sec.tls_ca_file), ("cert", sec.tls_scheduler_cert), ("key", sec.tls_scheduler_key)):
        path = root / f"{name}.pem"
        path.write_text(pem)
        path.chmod(0o600)
        files[name] = str(path)
    return files


def test_tls_cluster_rejects_an_unauthenticated_client(tmp_path):
    from distributed import Client
    from distributed.security import Security

    tls = _write_tls_files(tmp_path)
    c = Cluster(tmp_path, n_workers=1, tls=tls)
    try:
        assert c.address.startswith("tls://")
        sec = Security(
            tls_ca_file=tls["ca"], tls_client_cert=tls["cert"], tls_client_key=tls["key"], require_encryption=True
        )
        with Client(c.address, security=sec, timeout="30s") as client:
            client.wait_for_workers(1, timeout=60)
            X = np.random.default_rng(0).standard_normal((5000, 6))
            with client.as_current():
                import dask

                with dask.config.set(scheduler=client.get):
                    pca = bigdr.PCA(2).fit(X)
            np.testing.assert_allclose(pca.explained_variance_, bigdr.PCA(2).fit(X).explained_variance_, rtol=1e-10)
        # The command line reaches it through dask's TLS configuration (cluster/README.md).
        import dask

        tls_config = {
            "distributed.comm.tls.ca-file": tls["ca"],
            "distributed.comm.tls.client.cert": tls["cert"],
            "distributed.comm.tls.client.key": tls["key"],
            "distributed.comm.require-encryption": True,
        }
        X = np.random.default_rng(1).standard_normal((3000, 5))
        np.save(tmp_path / "x.npy", X)
        with dask.config.set(tls_config):
            assert (
                main(
                    [
                        "fit-transform",
                        str(tmp_path / "x.npy"),
                        str(tmp_path / "y.zarr"),
                        "-k",
                        "2",
                        "--scheduler",
                        c.address,
                    ]
                )
                == 0
            )
        np.testing.assert_allclose(
            np.abs(zarr.open(str(tmp_path / "y.zarr"))[:]), np.abs(bigdr.PCA(2).fit_transform(X)), atol=1e-9
        )
        # A client that trusts the cluster's CA but shows no certificate: the scheduler refuses the
        # handshake (distributed itself will not even try without a certificate).
        import socket
        import ssl

        host, port = c.address.removeprefix("tls://").rsplit(":", 1)
        ctx = ssl.create_default_context(cafile=tls["ca"])
        ctx.check_hostname = False
        with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
            with socket.create_connection((host, int(port)), timeout=5) as raw:
                with ctx.wrap_socket(raw) as conn:
                    conn.sendall(b"x" * 64)
                    if not conn.recv(1):
                        raise ConnectionResetError("closed by the scheduler")
        with pytest.raises((OSError, TimeoutError)):
            Client(c.address.replace("tls://", "tcp://"), timeout="3s")  # plain TCP to a TLS scheduler
        (tmp_path / "other").mkdir()
        other = _write_tls_files(tmp_path / "other")
        wrong = Security(
            tls_ca_file=other["ca"], tls_client_cert=other["cert"], tls_client_key=other["key"], require_encryption=True
        )
        with pytest.raises((OSError, TimeoutError)):
            Client(c.address, security=wrong, timeout="3s")  # a certificate the cluster's CA did not sign
    finally:
        c.close()


def test_a_local_scheduler_asked_for_runs_here_with_progress_on(cluster):
    """Rows in this process are checked here, also with progress lines and a client (the CLI's case)."""
    from bigdr import as_array
    from bigdr.io import rows_in_memory
    from bigdr.runtime.compute import progress

    X = np.random.default_rng(0).standard_normal((1_000, 3))
    before = _transitions(cluster.client)
    with progress("lines"):
        assert rows_in_memory(as_array(X, chunk_bytes=4096)) is X
        Y = X.copy()
        Y[500, 1] = np.nan
        with pytest.raises(ValueError, match="row 500"):
            rows_in_memory(as_array(Y, chunk_bytes=4096))
    assert _transitions(cluster.client) == before  # nothing went to the workers
