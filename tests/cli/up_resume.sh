#!/usr/bin/env bash
# gpubank up --data-dir: a stopped platform resumes where it stopped, appending only what
# the store does not hold yet, and the audit chain stays whole.
#   up_resume.sh GPUBANK
set -euo pipefail
gpubank=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
flags=(up --speed max --port 0 --quiet --exit-when-done --hours 3 --serving-load 0.05 --data-dir "$dir/data")

"$gpubank" "${flags[@]}" 2> "$dir/first.log"
grep -q "stopped at 2026-11-30T19:00:00Z" "$dir/first.log" || { cat "$dir/first.log"; echo "first run did not reach 3 h"; exit 1; }
entries() { "$gpubank" bank ledger --store "$dir/data/gpubank.db" -o json | sed -n 's/^  "entries": \([0-9]*\),$/\1/p'; }
first=$(entries)
[ "${first:-0}" -gt 0 ] || { echo "the first run stored no ledger entries"; exit 1; }

# The second start replays to the saved clock (the end of the day) and appends nothing.
"$gpubank" "${flags[@]}" 2> "$dir/second.log"
grep -q "resuming from .*up.json at virtual time 10800 s" "$dir/second.log" || { cat "$dir/second.log"; echo "no resume"; exit 1; }
second=$(entries)
[ "$first" = "$second" ] || { echo "ledger grew on resume: $first -> $second"; exit 1; }
"$gpubank" audit verify --store "$dir/data/gpubank.db" > "$dir/verify.txt" || { cat "$dir/verify.txt"; exit 1; }

# Stopped halfway (SIGTERM at some virtual time), then resumed to the end: the store holds
# exactly what an uninterrupted run stores (the run is a pure function of its inputs).
"$gpubank" up --speed 3600 --port 0 --quiet --hours 3 --serving-load 0.05 --data-dir "$dir/half" 2> "$dir/half.log" &
pid=$!
sleep 1.5
kill -TERM "$pid"
wait "$pid" || { cat "$dir/half.log"; echo "SIGTERM did not stop it cleanly"; exit 1; }
grep -q "shutting down" "$dir/half.log" || { cat "$dir/half.log"; exit 1; }
"$gpubank" up --speed max --port 0 --quiet --exit-when-done --hours 3 --serving-load 0.05 --data-dir "$dir/half" 2> "$dir/rest.log"
grep -q "resuming from" "$dir/rest.log" || { cat "$dir/rest.log"; echo "no resume"; exit 1; }
resumed=$("$gpubank" bank ledger --store "$dir/half/gpubank.db" -o json | sed -n 's/^  "entries": \([0-9]*\),$/\1/p')
[ "$resumed" = "$first" ] || { echo "interrupted and resumed: $resumed ledger entries, uninterrupted: $first"; exit 1; }
"$gpubank" audit verify --store "$dir/half/gpubank.db" > "$dir/verify-half.txt" || { cat "$dir/verify-half.txt"; exit 1; }

# Other flags on the same data directory are refused, naming the saved run.
if "$gpubank" up --seed 2 --hours 3 --serving-load 0.05 --port 0 --data-dir "$dir/data" 2> "$dir/third.log"; then
  echo "a different seed was accepted"; exit 1
fi
grep -q "holds the run with --seed 1" "$dir/third.log" || { cat "$dir/third.log"; exit 1; }
echo "resume ok: $first ledger entries"
