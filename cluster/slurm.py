"""Run a bigdr command on SLURM (or PBS) worker jobs through dask-jobqueue.

    pip install dask-jobqueue
    python cluster/slurm.py --jobs 8 --queue normal --memory 16GB -- \
        fit-transform /shared/data.zarr /shared/emb.zarr --method isomap

Each job is one dask worker process with ``--cores`` threads; the scheduler
runs in this process (start it on a login or head node that the compute
nodes can reach). Input and output paths must be on a file system every node
sees. Use ``--pbs`` for PBS/Torque (``PBSCluster``, same options).
"""

import argparse
import sys

from bigdr.cli.main import main as bigdr_main


def run() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=4, help="worker jobs to submit")
    ap.add_argument("--cores", type=int, default=4, help="threads per worker job")
    ap.add_argument("--memory", default="16GB", help="memory per worker job")
    ap.add_argument("--queue", default=None)
    ap.add_argument("--account", default=None)
    ap.add_argument("--walltime", default="02:00:00")
    ap.add_argument("--pbs", action="store_true", help="PBS/Torque instead of SLURM")
    ap.add_argument("bigdr_args", nargs=argparse.REMAINDER, help="-- then a bigdr command")
    args = ap.parse_args()
    from dask_jobqueue import PBSCluster, SLURMCluster
    from distributed import Client

    cls = PBSCluster if args.pbs else SLURMCluster
    extra = {"account": args.account} if args.account else {}
    with (
        cls(
            cores=args.cores,
            processes=1,
            memory=args.memory,
            queue=args.queue,
            walltime=args.walltime,
            # One BLAS thread per dask thread on the compute nodes too.
            job_script_prologue=["export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1"],
            **extra,
        ) as cluster,
        Client(cluster) as client,
    ):
        cluster.scale(jobs=args.jobs)
        client.wait_for_workers(1, timeout=3600)
        command = [a for a in args.bigdr_args if a != "--"]
        return bigdr_main(command + ["--scheduler", cluster.scheduler_address])


if __name__ == "__main__":
    sys.exit(run())
