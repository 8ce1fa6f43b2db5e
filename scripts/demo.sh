#!/usr/bin/env bash
# Installs dependencies, builds roam and plans the bundled default input: one GPT-2 XL training
# step (configs/gpt2-xl.yaml), first as PyTorch would run it, then with roam's planner.
# Usage: scripts/demo.sh [CONFIG.yaml | GRAPH.json]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh release
roam=./build/release/apps/roam
input="${1:-configs/gpt2-xl.yaml}"
mkdir -p out
plan="out/$(basename "${input%.*}").plan.json"

echo "== PyTorch's own order and caching allocator (program order, pytorch layout)"
"$roam" evaluate "$input" --order program --layout pytorch
echo
echo "== roam: best heuristic order and best-fit layout, validated, written to $plan"
"$roam" evaluate "$input" --order heuristic --layout best-fit -o "$plan"
