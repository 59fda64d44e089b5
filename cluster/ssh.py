"""Run a bigdr command on machines reached over SSH (distributed's SSHCluster).

    pip install asyncssh
    python cluster/ssh.py --hosts head,node1,node2 --memory 8GiB -- \
        fit-transform /shared/data.zarr /shared/emb.zarr -k 10

The first host runs the scheduler, the others one worker process each with
``--nthreads`` threads. Every host needs the same Python environment (bigdr
installed) and passwordless SSH from here; data paths must be shared.
"""

import argparse
import sys

from bigdr.cli.main import main as bigdr_main


def run() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", required=True, help="comma-separated; the first runs the scheduler")
    ap.add_argument("--nthreads", type=int, default=4)
    ap.add_argument("--memory", default="8GiB", help="memory limit per worker")
    ap.add_argument("--python", default=None, help="remote python executable, if not the same path as here")
    ap.add_argument("bigdr_args", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    from distributed import Client, SSHCluster

    hosts = args.hosts.split(",")
    with (
        SSHCluster(
            hosts,
            connect_options={"known_hosts": None},
            worker_options={"nthreads": args.nthreads, "memory_limit": args.memory},
            scheduler_options={"port": 8786, "dashboard_address": ":8787"},
            remote_python=args.python,
        ) as cluster,
        Client(cluster) as client,
    ):
        client.wait_for_workers(len(hosts) - 1, timeout=600)
        command = [a for a in args.bigdr_args if a != "--"]
        return bigdr_main(command + ["--scheduler", cluster.scheduler_address])


if __name__ == "__main__":
    sys.exit(run())
