#!/bin/bash
# roam's plans in real training steps on a GPU (issue 25; perf/RESULTS.md, "Plans on a CUDA
# GPU"): for each config, trace its training step with this machine's PyTorch, plan it with
# `roam optimize`, run the plan for two steps on the GPU beside eager PyTorch, and record both
# runs' torch.cuda.max_memory_allocated/reserved against the plan's total.
#
#   ROAM_BINARY=build/release/apps/roam perf/torch-cuda.sh OUTDIR configs/gpt2-small.yaml ...
#
# DEVICE=cpu runs the same on the CPU (bit-identical to eager); TIME_LIMIT is roam optimize's
# --time-limit (default 60); RUN_FLAGS are more run_plan.py flags (--no-cudnn). OUTDIR gets
# NAME.graph.json, NAME.plan.json, NAME.optimize.json (the plan's summary) and NAME.run.json
# (run_plan.py's report). Exit 1 when any step failed.
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 OUTDIR CONFIG.yaml..." >&2
  exit 2
fi
out=$1
shift
here=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
roam=${ROAM_BINARY:-$here/build/release/apps/roam}
device=${DEVICE:-cuda}
mkdir -p "$out" || exit 2
status=0
for cfg in "$@"; do
  name=$(basename "$cfg" .yaml)
  echo "== $name ($device)"
  start=$(date +%s.%N)
  if ! "$py" "$here/tools/torch_export/export.py" --config "$cfg" \
      -o "$out/$name.graph.json"; then
    echo "$name: export failed" >&2
    status=1
    continue
  fi
  traced=$(date +%s.%N)
  if ! "$roam" optimize "$out/$name.graph.json" --time-limit "${TIME_LIMIT:-60}" --quiet \
      -o "$out/$name.plan.json" --json >"$out/$name.optimize.json"; then
    echo "$name: roam optimize failed" >&2
    status=1
    continue
  fi
  planned=$(date +%s.%N)
  if ! "$py" "$here/tools/torch_export/run_plan.py" --config "$cfg" --roam "$roam" \
      --graph "$out/$name.graph.json" --plan "$out/$name.plan.json" --steps 2 \
      --device "$device" --check-eager ${RUN_FLAGS:-} --json >"$out/$name.run.json"; then
    echo "$name: the planned run failed or differs from eager" >&2
    status=1
  fi
  ran=$(date +%s.%N)
  "$py" - "$out/$name.run.json" "$start" "$traced" "$planned" "$ran" <<'EOF'
import json, sys
path, t0, t1, t2, t3 = sys.argv[1], *map(float, sys.argv[2:])
try:
    r = json.load(open(path))
except (OSError, ValueError):
    sys.exit(0)
mib = lambda n: "n/a" if n is None else f"{n / 2**20:,.1f} MiB"
s = r.get("plan", {})
print(f"export {t1 - t0:.1f} s, optimize {t2 - t1:.1f} s, run {t3 - t2:.1f} s")
print(f"plan total {mib(s.get('total_peak'))} (arena {mib(r.get('arena_bytes'))})")
for who in ("planned", "eager"):
    print(f"{who}: max_memory_allocated {mib(r.get(who + '_peak_allocated'))}, "
          f"max_memory_reserved {mib(r.get(who + '_peak_reserved'))}")
print(f"matches eager: {r.get('matches_eager')} ({r.get('difference')}); transient bytes at "
      f"most {mib(r.get('transient_bytes_max'))} at once ({r.get('transient_max_op')})")
EOF
done
exit $status
