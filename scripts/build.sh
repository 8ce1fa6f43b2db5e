#!/usr/bin/env bash
# Configures and builds one CMake preset (default: release) after installing dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
bash scripts/install-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
