#!/usr/bin/env bash
# Installs dependencies, builds (warnings are errors) and runs the whole test suite.
# Usage: scripts/test.sh [preset]   (release, debug, asan or tsan; default release)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
bash scripts/build.sh "$preset"
ctest --preset "$preset" -j "$(nproc)" --timeout 900
