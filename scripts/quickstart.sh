#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs gpubank's main job.
#
# Until the embedded twin lands (`gpubank up`), the main job validates the shipped policy
# set: the same command will start `gpubank up` once it exists.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/bootstrap.sh
echo "quickstart: configuring and building (release)" >&2
cmake --preset release >/dev/null
cmake --build --preset release --target gpubank
echo "quickstart: gpubank validate examples/policies examples/workloads" >&2
exec ./build/release/cmd/gpubank/gpubank validate examples/policies examples/workloads "$@"
