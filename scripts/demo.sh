#!/usr/bin/env bash
# Installs dependencies, builds roam and plans the bundled default input: one GPT-2 XL training
# step (configs/gpt2-xl.yaml) with roam's optimizer, which prints PyTorch's own plan and the
# best baseline plan beside its own, and writes the validated plan.
# Usage: scripts/demo.sh [CONFIG.yaml | GRAPH.json]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh release
roam=./build/release/apps/roam
input="${1:-configs/gpt2-xl.yaml}"
mkdir -p out
plan="out/$(basename "${input%.*}").plan.json"

echo "== roam optimize $input (PyTorch and the best baseline beside it), plan written to $plan"
"$roam" optimize "$input" -o "$plan"
