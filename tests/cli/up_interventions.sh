#!/usr/bin/env bash
# gpubank up --data-dir: what the API does to the running twin (a GPU's XID error, a tidal
# freeze) is journalled before it takes effect, so a restart after SIGKILL replays it at the
# same virtual time and the store's replay matches, where it used to refuse the data
# directory as "another run". An edited journal stops the start.
#   up_interventions.sh GPUBANK
set -euo pipefail
gpubank=$1
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -KILL "$pid" 2> /dev/null; rm -rf "$dir"' EXIT
day=(--port 0 --hours 3 --serving-load 0.05 --operator ci --data-dir "$dir/data")

# Paced (600x: the 3 hours take 18 s), so the API's calls land mid-run.
"$gpubank" up --speed 600 --quiet "${day[@]}" --token-file "$dir/token" 2> "$dir/first.log" &
pid=$!
port=
for _ in $(seq 1 600); do
  port=$(sed -n 's|^gpubank up: serving http://127.0.0.1:\([0-9]*\) .*|\1|p' "$dir/first.log")
  [ -n "$port" ] && break
  kill -0 "$pid" 2> /dev/null || { cat "$dir/first.log"; echo "gpubank up exited before serving"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { cat "$dir/first.log"; echo "gpubank up did not serve"; exit 1; }
api() {  # METHOD PATH [BODY]: prints the body, fails on a status other than 200
  curl -sS -o "$dir/body" -w '%{http_code}' -X "$1" -H "Authorization: Bearer $(cat "$dir/token")" \
    -H 'Content-Type: application/json' ${3:+--data "$3"} "http://127.0.0.1:$port$2" > "$dir/status"
  [ "$(cat "$dir/status")" = 200 ] || { echo "$1 $2: $(cat "$dir/status") $(cat "$dir/body")"; return 1; }
  cat "$dir/body"
}
# A training GPU that holds a job, once there is one.
uuid=
for _ in $(seq 1 300); do
  uuid=$(api GET '/api/v1/gpus?pool=h100-rdma-training' |
         python3 -c 'import json,sys; print(next((g["uuid"] for g in json.load(sys.stdin) if g["workloads"]), ""))')
  [ -n "$uuid" ] && break
  sleep 0.05
done
[ -n "$uuid" ] || { echo "no training GPU held a job"; exit 1; }
api POST "/api/v1/gpus/$uuid/health" '{"healthy": false, "xid": 79}' > /dev/null
api POST /api/v1/tidal/weekday-serving-training/freeze '{"reason": "incident 42"}' > /dev/null
sleep 1
kill -KILL "$pid"
wait "$pid" 2> /dev/null || true
pid=

# The restart replays the journal with the day and finishes it.
"$gpubank" up --speed max --quiet --exit-when-done "${day[@]}" 2> "$dir/second.log" ||
  { cat "$dir/second.log"; echo "the restart after SIGKILL refused the data directory"; exit 1; }
grep -q "resuming from .*, with 2 of 2 journalled interventions applied" "$dir/second.log" ||
  { cat "$dir/second.log"; echo "the journal was not replayed"; exit 1; }
grep -q "stopped at 2026-11-30T19:00:00Z" "$dir/second.log" || { cat "$dir/second.log"; echo "the day did not finish"; exit 1; }
"$gpubank" audit verify --store "$dir/data/gpubank.db" > "$dir/verify.txt" || { cat "$dir/verify.txt"; exit 1; }
"$gpubank" audit verify --store "$dir/data/interventions.db" > "$dir/verify-journal.txt" ||
  { cat "$dir/verify-journal.txt"; exit 1; }
grep -q "audit chain intact: 2 entries" "$dir/verify-journal.txt" || { cat "$dir/verify-journal.txt"; exit 1; }

# Once more, on the finished store: everything matches, nothing is appended.
"$gpubank" up --speed max --quiet --exit-when-done "${day[@]}" 2> "$dir/third.log" ||
  { cat "$dir/third.log"; echo "the third start refused the data directory"; exit 1; }
grep -q "with 2 of 2 journalled interventions applied" "$dir/third.log" || { cat "$dir/third.log"; exit 1; }

# An attacker with the files removes the freeze from the journal: its chain breaks, and the
# start says so instead of replaying another history.
python3 - "$dir/data/interventions.db" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
    db.execute(f"DROP TRIGGER {name}")
db.execute("UPDATE audit SET numbers = replace(numbers, 'incident 42', 'incident 43')")
db.commit()
EOF
if "$gpubank" up --speed max --quiet --exit-when-done "${day[@]}" 2> "$dir/tampered.log"; then
  echo "an edited journal was replayed"; exit 1
fi
grep -q "the journal's chain is broken at entry 2" "$dir/tampered.log" || { cat "$dir/tampered.log"; exit 1; }
echo "up interventions ok: an XID error on $uuid and a tidal freeze survived SIGKILL; an edited journal was refused"
