#!/usr/bin/env bash
# Installs everything roam needs to build, test and benchmark, from Debian's packages.
# Idempotent: does nothing (and needs no network) when every package is already present.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config
  libtbb-dev libglpk-dev libyaml-cpp-dev
  nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3
  # scripts/fuzz.sh: the libFuzzer targets in fuzz/ are built with clang.
  clang libfuzzer-14-dev
  # .ci/run checks the style of every C++ file.
  clang-format
  # tools/torch_export and its CTest suite (run with /usr/bin/python3); about 180 packages,
  # roughly two minutes to install.
  python3-torch python3-torchvision python3-yaml
  # README.md's offline install of roam_torch (pip install --no-build-isolation, setuptools).
  python3-pip python3-setuptools python3-wheel
  # roam_torch's op-scratch allocator (roam_torch/scratch_allocator.cpp) includes c10's headers.
  libtorch-dev
  # report.html's CTest renders it in headless Chromium; the sharding test runs GNU parallel.
  chromium parallel
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
echo "install-deps: installing ${missing[*]}" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
