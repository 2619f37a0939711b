#!/usr/bin/env bash
# expect.sh EXIT_CODE REGEX [!REGEX] -- COMMAND...
# Runs COMMAND and fails unless it exits with EXIT_CODE and its output (stdout and stderr)
# matches the extended regular expression REGEX (and does not match the one after "!").
set -u
want=$1; shift
pattern=$1; shift
absent=""
if [ "${1:-}" != "--" ]; then absent=${1#!}; shift; fi
[ "${1:-}" = "--" ] || { echo "usage: expect.sh CODE REGEX [!REGEX] -- COMMAND..." >&2; exit 2; }
shift
output=$("$@" 2>&1)
code=$?
fail=0
if [ "$code" -ne "$want" ]; then echo "exit code $code, expected $want" >&2; fail=1; fi
if ! grep -Eq -- "$pattern" <<<"$output"; then echo "output does not match: $pattern" >&2; fail=1; fi
if [ -n "$absent" ] && grep -Eq -- "$absent" <<<"$output"; then echo "output matches: $absent" >&2; fail=1; fi
if [ $fail -ne 0 ]; then
  echo "--- command: $*" >&2
  echo "--- output:" >&2
  printf '%s\n' "$output" | head -n 60 >&2
fi
exit $fail
