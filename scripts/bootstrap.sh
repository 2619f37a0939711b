#!/usr/bin/env bash
# Installs the Debian 12 packages gpubank needs to build, test and run.
# Idempotent: when every package is already installed it touches nothing (no apt-get update).
# Works as root, or through sudo for an ordinary user.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git
  # lld provides /usr/bin/ld.lld, which clang's -fuse-ld=lld (the asan preset) looks for
  clang-14 libclang-rt-14-dev lld-14 lld
  # libraries (see ../shared/spec/build-notes.md)
  libyaml-cpp-dev nlohmann-json3-dev libcpp-httplib-dev libhowardhinnant-date-dev tzdata
  libcli11-dev libspdlog-dev libfmt-dev libssl-dev openssl libsqlite3-dev libpqxx-dev
  # Boost.Beast and Boost.Asio (header-only) for the admission webhook's HTTPS server
  libboost-dev
  # gRPC and protobuf: the node exporter's client of the kubelet's PodResources API (gRPC on a
  # unix socket); protoc and grpc_cpp_plugin generate its C++ from proto/ at build time
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  # zlib: the node exporter gzips its page once per refresh; bench/webhook_abuse builds its
  # gzip bomb with it
  zlib1g-dev
  # the release build's process allocator (CMake option GPUBANK_MIMALLOC)
  libmimalloc-dev
  # the store's PostgreSQL backend: its tests and benchmark start a private server
  postgresql
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # real Prometheus tooling: promtool checks and unit-tests the rendered rules
  prometheus
  # a real Alertmanager: `gpubank scan` delivers its notices to its v2 API (tests/governance)
  prometheus-alertmanager
  # the portal's browser tests: headless Chromium driven over WebDriver from Python's standard
  # library, against a `gpubank up` the script waits for with curl (tests/portal)
  chromium chromium-driver python3 curl
  ca-certificates
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#packages[@]} packages present" >&2
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "bootstrap: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi

echo "bootstrap: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
