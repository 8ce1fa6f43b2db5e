#!/bin/bash
# The Slurm array of bench-array.sbatch with GNU parallel, on one machine or over ssh
# (add --sshloginfile): N shards as separate processes, then the merge.
#   scripts/cluster/bench-parallel.sh SWEEP.yaml N OUT [ROAM]
# The machine's cores are divided between the shards (ROAM_THREADS overrides the share), so
# N shards do not each start a thread per core. A failed run does not stop the other shards:
# every shard finishes, the merge runs, and the script fails at the end if any shard failed.
set -euo pipefail
sweep=$1 n=$2 out=$3 roam=${4:-roam}
cores=$(nproc)
threads=${ROAM_THREADS:-$((cores / n > 0 ? cores / n : 1))}
status=0
parallel --halt never -j "$n" "$roam" bench "$sweep" --shard {}/"$n" --threads-per-job "$threads" \
  --quiet -o "$out"/shard-{} ::: $(seq 0 $((n - 1))) || status=$?
if [ "$status" -ne 0 ]; then
  echo "bench-parallel: $status shard(s) failed; merging what finished" >&2
fi
"$roam" merge-results "$out"/shard-* -o "$out"/merged || status=1
exit "$status"
