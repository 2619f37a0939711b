#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs gpubank's main job.
#
# The main job is `gpubank up`: the embedded platform on the twin, served on
# http://127.0.0.1:8080 (Ctrl-C stops it). Arguments are passed to it.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/bootstrap.sh
echo "quickstart: configuring and building (release)" >&2
cmake --preset release >/dev/null
cmake --build --preset release --target gpubank
echo "quickstart: gpubank validate examples/policies examples/workloads" >&2
./build/release/cmd/gpubank/gpubank validate examples/policies examples/workloads
echo "quickstart: gpubank up $*" >&2
exec ./build/release/cmd/gpubank/gpubank up "$@"
