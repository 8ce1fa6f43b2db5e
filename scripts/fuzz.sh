#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, `fuzz` preset: clang, ASan + UBSan) and runs each for a
# fixed budget, growing its corpus in build/fuzz/corpus/<target>. CI runs a short budget; run it
# longer to search further (docs/fuzzing.md).
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   (default 45 s, every target)
# Exit status: 0 when no target found anything, 1 otherwise (the crashing input is saved as
# build/fuzz/findings/<target>/crash-*, with the report in build/fuzz/logs/<target>.log).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-45}"
shift || true
targets=("$@")
# Every target fuzz/CMakeLists.txt defines, so a new one is run without editing this list.
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(sed -n 's/^roam_add_fuzzer(\([a-z_]*\) .*/\1/p' fuzz/CMakeLists.txt)
fi

bash scripts/install-deps.sh
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)" --target "${targets[@]}"

# Seeds: the project's own inputs of each format, plus fuzz/corpus/<target> (past findings and
# hand-written edge cases, each also a regression test in tests/).
seeds_of() {
  case "$1" in
    graph_fuzz) echo tests/data fuzz/corpus/graph_fuzz ;;
    plan_fuzz) echo tests/data fuzz/corpus/plan_fuzz ;;
    config_fuzz) echo configs tests/gen/data fuzz/corpus/config_fuzz ;;
    layout_csv_fuzz) echo tests/data/ilp fuzz/corpus/layout_csv_fuzz ;;
    sweep_fuzz) echo perf/sweeps fuzz/corpus/sweep_fuzz ;;
    *) echo "fuzz/corpus/$1" ;;
  esac
}

failed=0
for target in "${targets[@]}"; do
  corpus="build/fuzz/corpus/$target"
  findings="build/fuzz/findings/$target"
  log="build/fuzz/logs/$target.log"
  mkdir -p "$corpus" "$findings" "$(dirname "$log")"
  # shellcheck disable=SC2046
  if "build/fuzz/fuzz/$target" "$corpus" $(seeds_of "$target") -max_total_time="$seconds" \
      -max_len=8192 -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$findings/" >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    echo "fuzz: $target: ${runs:-?} inputs in ${seconds} s (${speed:-?} exec/s), no finding"
  else
    echo "fuzz: $target: FINDING, see $log and $findings/" >&2
    tail -n 40 "$log" >&2
    failed=1
  fi
done
exit "$failed"
