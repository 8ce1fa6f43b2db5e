#!/usr/bin/env bash
# Installs dependencies, builds roam and plans the bundled default input.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh release
mkdir -p out
input="${1:-tests/data/tiny.graph.json}"
./build/release/apps/roam evaluate "$input" --order heuristic --layout best-fit -o out/plan.json
./build/release/apps/roam validate "$input" out/plan.json
