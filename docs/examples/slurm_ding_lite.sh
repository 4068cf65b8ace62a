#!/bin/bash
# A ding_lite parallel run as one SLURM job: the coordinator on the job's first node, the
# learner's ranks under torchrun on every node, collectors spread over the nodes.
#
#   sbatch --nodes 2 docs/examples/slurm_ding_lite.sh EXPERIMENT RUN_DIR [key=value ...]
#
# RUN_DIR must be on a filesystem every node mounts at the same path. Settings (environment):
#   RANKS_PER_NODE  learner ranks on each node (default 1)
#   COLLECTORS      collector processes (default 2 per node)
#   PORT            the coordinator's port (default 7235); RDZV_PORT torchrun's (29500)
#   BIND            the address the coordinator binds (default 0.0.0.0: the nodes reach it)
#   WORKER_HOST     the address workers bind and register (default: the node's host name)
#SBATCH --job-name=ding-lite
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=8
set -euo pipefail

EXP=${1:?usage: slurm_ding_lite.sh EXPERIMENT RUN_DIR [key=value ...]}
RUN_DIR=${2:?usage: slurm_ding_lite.sh EXPERIMENT RUN_DIR [key=value ...]}
shift 2
NODES=${SLURM_JOB_NUM_NODES:-1}
RANKS_PER_NODE=${RANKS_PER_NODE:-1}
COLLECTORS=${COLLECTORS:-$((2 * NODES))}
PORT=${PORT:-7235}
RDZV_PORT=${RDZV_PORT:-29500}
BIND=${BIND:-0.0.0.0}
HEAD=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
HEAD=${HEAD_ADDR:-$HEAD}
# One token for every process of the run (never on a command line or in config.json).
DING_LITE_TOKEN=${DING_LITE_TOKEN:-$(python -c 'import secrets; print(secrets.token_urlsafe(32))')}
export DING_LITE_TOKEN

# The coordinator runs in this batch step, on the first node. The learner's batch is one
# rollout per configured collector, and its minibatch must split over every rank.
ding-lite coordinator -c "$EXP" --exp-dir "$RUN_DIR" --host "$BIND" --port "$PORT" \
    "system.collectors=$COLLECTORS" "$@" &
COORDINATOR=$!

# The learner: one torchrun per node, RANKS_PER_NODE ranks each; rank 0 registers.
WORKER_HOST_ARG='--host "${WORKER_HOST:-$(hostname)}"'
srun --nodes "$NODES" --ntasks "$NODES" --ntasks-per-node 1 bash -c "
    torchrun --nnodes $NODES --nproc-per-node $RANKS_PER_NODE \
        --rdzv-backend c10d --rdzv-endpoint $HEAD:$RDZV_PORT --rdzv-id ding-lite-\${SLURM_JOB_ID:-0} \
        -m ding_lite learner --coordinator $HEAD:$PORT $WORKER_HOST_ARG --worker-id learner0
" &
LEARNER=$!

# The collectors, spread over the nodes; the task id names each one.
srun --ntasks "$COLLECTORS" bash -c "
    ding-lite collector --coordinator $HEAD:$PORT $WORKER_HOST_ARG \
        --worker-id collector\${SLURM_PROCID:-0}
" &
COLLECTOR_STEP=$!

# The coordinator ends the run (and closes the workers); its exit code is the job's.
status=0
wait "$COORDINATOR" || status=$?
wait "$LEARNER" || true
wait "$COLLECTOR_STEP" || true
exit "$status"
