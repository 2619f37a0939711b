# gpubank bank ledger and gpubank audit verify, on stores written by store_fill from the
# JSON lines in data/ (b borrows from a and c; one re-attribution; three audit entries).
add_executable(store_fill store_fill.cpp)
target_link_libraries(store_fill PRIVATE gpubank_store SQLite::SQLite3 gpubank_warnings)

set(BANK_STORE ${CMAKE_CURRENT_BINARY_DIR}/bank-store/bank.db)
set(TAMPERED_STORE ${CMAKE_CURRENT_BINARY_DIR}/bank-store/tampered.db)
set(BANK_DATA ${CMAKE_CURRENT_SOURCE_DIR}/data)
add_test(NAME cli.bank-store-setup
         COMMAND sh -c "mkdir -p \"$(dirname \"$2\")\" && \"$1\" \"$2\" \"$4\" \"$5\" && \"$1\" \"$3\" \"$4\" \"$5\" --tamper-audit-seq 2"
                 sh $<TARGET_FILE:store_fill> ${BANK_STORE} ${TAMPERED_STORE} ${BANK_DATA}/ledger.jsonl ${BANK_DATA}/audit.jsonl)
set_tests_properties(cli.bank-store-setup PROPERTIES FIXTURES_SETUP bank_store)

# cli_bank_test(name code regex [!regex] -- command...): a cli_test that needs the stores.
function(cli_bank_test name)
  cli_test(${name} ${ARGN})
  set_tests_properties(cli.${name} PROPERTIES FIXTURES_REQUIRED bank_store)
endfunction()

cli_test(help-bank 0 "ledger +Positions, borrow records" -- ${GPUBANK} bank --help)
cli_test(help-bank-ledger 0 "Usage:.*bank ledger \\[OPTIONS\\]" -- ${GPUBANK} bank ledger --help)
cli_test(help-audit 0 "verify +Check a store's audit hash chain" -- ${GPUBANK} audit --help)
cli_test(help-audit-verify 0 "Usage:.*audit verify \\[OPTIONS\\]" -- ${GPUBANK} audit verify --help)
cli_test(usage-bank-without-subcommand 2 "A subcommand is required" -- ${GPUBANK} bank)
cli_test(usage-bank-ledger-without-store 2 "--store is required" -- ${GPUBANK} bank ledger)
cli_test(usage-bank-ledger-negative-time 2 "--at" -- ${GPUBANK} bank ledger --store x.db --at -5)
cli_test(usage-bank-ledger-empty-range 2 "--from must be before --to" -- ${GPUBANK} bank ledger --store x.db --from 10 --to 10)
cli_test(usage-audit-verify-without-store 2 "--store is required" -- ${GPUBANK} audit verify)
cli_test(usage-audit-verify-bad-output 2 "xml" -- ${GPUBANK} audit verify --store x.db -o xml)
cli_test(bank-ledger-missing-store 1 "no-such.db: no such file" -- ${GPUBANK} bank ledger --store ${CMAKE_CURRENT_BINARY_DIR}/no-such.db)
cli_test(audit-verify-missing-store 1 "no-such.db: no such file" -- ${GPUBANK} audit verify --store ${CMAKE_CURRENT_BINARY_DIR}/no-such.db)

# At the end: nothing borrowed; over all time a lent b 4.5 GPU-hours (2 x 90 min + 3 x 30 min)
# and c lent b 3 (3 x 60 min).
cli_bank_test(bank-ledger-text 0 "a +b +p +4\\.500 +16200000 +2"
              -- ${GPUBANK} bank ledger --store ${BANK_STORE})
cli_bank_test(bank-ledger-text-positions 0 "p +c +8 +0 +0 +0 +3 +12 +5 +-"
              -- ${GPUBANK} bank ledger --store ${BANK_STORE})
# Half an hour in: b uses 7 with 5 borrowed (its borrowing limit 6 leaves 1), a lends 2, c 3.
cli_bank_test(bank-ledger-at 0 "p +b +2 +7 +5 +0 +0 +1 +- +6"
              -- ${GPUBANK} bank ledger --store ${BANK_STORE} --at 1800000)
cli_bank_test(bank-ledger-range-json 0 "\"gpuMs\": 5400000"
              -- ${GPUBANK} bank ledger --store ${BANK_STORE} --from 1800000 --to 3600000 -o json)
cli_bank_test(bank-ledger-records-yaml 0 "closeReason: Reattributed"
              -- ${GPUBANK} bank ledger --store ${BANK_STORE} -o yaml)
cli_bank_test(bank-ledger-workload 0 "trail of team-b/big: 8 entries"
              -- ${GPUBANK} bank ledger --store ${BANK_STORE} --workload team-b/big)
cli_bank_test(bank-ledger-workload-json 0 "\"kind\": \"BorrowClosed\""
              -- ${GPUBANK} bank ledger --store ${BANK_STORE} --workload team-b/big -o json)
cli_bank_test(audit-verify-intact 0 "audit chain intact: 3 entries, head [0-9a-f]{64} \\(seq 3\\)"
              -- ${GPUBANK} audit verify --store ${BANK_STORE})
cli_bank_test(audit-verify-json 0 "\"intact\": true"
              -- ${GPUBANK} audit verify --store ${BANK_STORE} -o json)
cli_bank_test(audit-verify-tampered 1 "audit chain broken at seq 2: hash mismatch"
              -- ${GPUBANK} audit verify --store ${TAMPERED_STORE})
cli_bank_test(audit-verify-tampered-json 1 "\"brokenSeq\": 2"
              -- ${GPUBANK} audit verify --store ${TAMPERED_STORE} -o json)
