#!/usr/bin/env bash
# A dask scheduler and N worker processes on this machine, with a memory limit per worker.
#
#   cluster/local.sh [N_WORKERS] [MEMORY_PER_WORKER]      (defaults: 2 workers, 2GiB)
#   bigdr fit-transform data.zarr emb.zarr --scheduler ./bigdr-cluster/scheduler.json
#
# Ctrl-C stops the scheduler and every worker. Workers run one thread each
# (BLAS at one thread: distributed sets OMP_NUM_THREADS=1 for its workers);
# above 80% of their limit they spill to ./bigdr-cluster/spill, and a worker
# past 95% is restarted by its nanny while the scheduler reruns its tasks.
set -euo pipefail
N="${1:-2}"
MEM="${2:-2GiB}"
DIR="${BIGDR_CLUSTER_DIR:-./bigdr-cluster}"
mkdir -p "$DIR"
rm -f "$DIR/scheduler.json"
trap 'kill 0' EXIT INT TERM
dask scheduler --host 127.0.0.1 --port 8786 --scheduler-file "$DIR/scheduler.json" --no-dashboard \
    >"$DIR/scheduler.log" 2>&1 &
while [ ! -f "$DIR/scheduler.json" ]; do sleep 0.2; done
for i in $(seq "$N"); do
    dask worker --scheduler-file "$DIR/scheduler.json" --nthreads 1 --memory-limit "$MEM" \
        --local-directory "$DIR/spill" --host 127.0.0.1 --no-dashboard >"$DIR/worker-$i.log" 2>&1 &
done
echo "scheduler tcp://127.0.0.1:8786 with $N workers of $MEM; scheduler file $DIR/scheduler.json (Ctrl-C stops all)"
wait
