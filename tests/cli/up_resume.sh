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
grep -q "resuming from .* at virtual time 10800 s: the replay matched the store's $first ledger and" "$dir/second.log" ||
  { cat "$dir/second.log"; echo "no resume"; exit 1; }
second=$(entries)
[ "$first" = "$second" ] || { echo "ledger grew on resume: $first -> $second"; exit 1; }
# Borrow record ids carry the epoch of the store's first writer; the restart took a new
# epoch (it fences any process still writing) but replays the same ids.
ids() { "$gpubank" bank ledger --store "$dir/data/gpubank.db" -o json | sed -n 's/^ *"id": "\([^"]*\)",*$/\1/p'; }
[ -n "$(ids)" ] || { echo "the run opened no borrow records"; exit 1; }
if ids | grep -v '^1-'; then echo "record ids without the first writer's epoch prefix 1-"; exit 1; fi
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

# A clock file that lags the store (as a SIGKILL leaves it: it is saved at most once a
# second) does not matter: the replay goes to the store's head, checking every entry.
sed -i 's/"virtualTimeMs": [0-9]*/"virtualTimeMs": 0/' "$dir/half/up.json"
"$gpubank" up --speed max --port 0 --quiet --exit-when-done --hours 3 --serving-load 0.05 --data-dir "$dir/half" \
  2> "$dir/stale.log" || { cat "$dir/stale.log"; echo "a stale clock was refused"; exit 1; }
grep -q "resuming from .* at virtual time [0-9]* s: the replay matched the store's $first ledger" "$dir/stale.log" ||
  { cat "$dir/stale.log"; echo "no resume from a stale clock"; exit 1; }
stale=$("$gpubank" bank ledger --store "$dir/half/gpubank.db" -o json | sed -n 's/^  "entries": \([0-9]*\),$/\1/p')
[ "$stale" = "$first" ] || { echo "resumed from a stale clock: $stale ledger entries, uninterrupted: $first"; exit 1; }

# Another run's store is refused on content, naming the first entry that differs, and
# nothing is appended to it: here without its clock file (which would name the seed).
rm "$dir/half/up.json"
if "$gpubank" up --seed 2 --speed max --port 0 --quiet --exit-when-done --hours 3 --serving-load 0.05 \
     --data-dir "$dir/half" 2> "$dir/other.log"; then
  echo "another run's store was accepted"; exit 1
fi
grep -q "the store's \(ledger\|audit\) entry [0-9]* differs from this run's: .*: the store holds another run" "$dir/other.log" ||
  { cat "$dir/other.log"; exit 1; }
other=$("$gpubank" bank ledger --store "$dir/half/gpubank.db" -o json | sed -n 's/^  "entries": \([0-9]*\),$/\1/p')
[ "$other" = "$first" ] || { echo "another run appended to the store: $other ledger entries, was $first"; exit 1; }
[ ! -e "$dir/half/up.json" ] || { cat "$dir/half/up.json"; echo "the refused run wrote its clock file"; exit 1; }

# Other flags on the same data directory are refused, naming the saved run.
if "$gpubank" up --seed 2 --hours 3 --serving-load 0.05 --port 0 --data-dir "$dir/data" 2> "$dir/third.log"; then
  echo "a different seed was accepted"; exit 1
fi
grep -q "holds the run with --seed 1" "$dir/third.log" || { cat "$dir/third.log"; exit 1; }
echo "resume ok: $first ledger entries"
