#!/usr/bin/env bash
# The portal in headless Chromium against a real `gpubank up` (tests/portal/portal_smoke_test.py):
# starts the platform on a free port with its operator token in a file, runs six virtual
# hours of its day at full speed, issues a viewer token and a group-admin token of ads with
# `gpubank token create`, and runs the browser test as the operator, the group admin (a
# policy change through the editor, approved by the operator) and the viewer.
#
#   [PORTAL_DIR=portal] run_portal_test.sh GPUBANK [SCREENSHOT_DIR]
#
# With SCREENSHOT_DIR the test also saves every page there (scripts/screenshots.sh). With
# PORTAL_DIR the platform serves the portal's files from that folder (`up --portal-dir`)
# instead of the ones built into GPUBANK: front-end work tested without a rebuild.
set -euo pipefail
gpubank=$1
shots=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/gpubank-portal-XXXXXX)
up_pid=
cleanup() {
  if [ -n "$up_pid" ]; then kill "$up_pid" 2>/dev/null || true; wait "$up_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

for tool in chromium chromedriver; do
  command -v "$tool" >/dev/null || { echo "run_portal_test: $tool is not installed (scripts/bootstrap.sh installs Debian chromium and chromium-driver)" >&2; exit 1; }
done

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
portal_dir=()
if [ -n "${PORTAL_DIR:-}" ]; then portal_dir=(--portal-dir "$PORTAL_DIR"); fi
"$gpubank" up --port "$port" --speed max --hours 6 --serving-load 0.05 --quiet \
  --auth-store "$work/auth.db" --token-file "$work/operator.token" --operator pat ${portal_dir[@]+"${portal_dir[@]}"} 2>"$work/up.log" &
up_pid=$!

base="http://127.0.0.1:$port"
for _ in $(seq 1 600); do
  if [ -s "$work/operator.token" ] && curl -sf "$base/readyz" >/dev/null 2>&1; then break; fi
  sleep 0.2
done
token=$(cat "$work/operator.token")
# The day runs at full speed: wait until it is over, so every figure holds still.
for _ in $(seq 1 900); do
  if curl -sf -H "Authorization: Bearer $token" "$base/api/v1/clock" | grep -q '"finished":true'; then break; fi
  sleep 0.2
done
curl -sf -H "Authorization: Bearer $token" "$base/api/v1/clock" | grep -q '"finished":true' \
  || { echo "run_portal_test: the day did not finish; see the log:" >&2; cat "$work/up.log" >&2; exit 1; }

viewer=$("$gpubank" token create --store "$work/auth.db" --subject vic --role viewer --group search 2>/dev/null)
group_admin=$("$gpubank" token create --store "$work/auth.db" --subject ada --role group-admin --group ads 2>/dev/null)
args=(--base-url "$base" --token "$token" --viewer-token "$viewer" --group-admin-token "$group_admin")
if [ -n "$shots" ]; then args+=(--screenshots "$shots"); fi
python3 "$here/portal_smoke_test.py" "${args[@]}"
