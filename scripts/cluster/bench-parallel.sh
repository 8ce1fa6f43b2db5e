#!/bin/bash
# The Slurm array of bench-array.sbatch with GNU parallel, on one machine or over ssh
# (add --sshloginfile): N shards as separate processes, then the merge.
#   scripts/cluster/bench-parallel.sh SWEEP.yaml N OUT [ROAM]
set -euo pipefail
sweep=$1 n=$2 out=$3 roam=${4:-roam}
parallel --halt now,fail=1 -j "$n" "$roam" bench "$sweep" --shard {}/"$n" --quiet -o "$out"/shard-{} \
  ::: $(seq 0 $((n - 1)))
"$roam" merge-results "$out"/shard-* -o "$out"/merged
