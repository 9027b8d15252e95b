#!/usr/bin/env bash
# Set up and run every check: ruff (lint and format), mypy --strict, ESLint, the whole test
# suite on every core (pytest-xdist; tests/README.md says what a test must do to run beside others).
# --quick (first argument): the inner loop, the same checks but only the in-process tests
# (unit, services, HTTP against the app; no subprocess server, PostgreSQL or browser).
# Extra arguments go to pytest (e.g. -k keys, or -m "not slow"; -n 0 runs in one process).
source "$(dirname "$0")/_venv.sh" dev,postgres
cd "$root"
# Keep compiled modules (__pycache__, git-ignored): with PYTHONDONTWRITEBYTECODE set, every
# xdist worker rewrote and compiled every test module again (half of its collection's CPU),
# and every server a test starts compiled the package again.
unset PYTHONDONTWRITEBYTECODE
tests=()
if [ "${1:-}" = "--quick" ]; then
  shift
  tests=(tests/unit tests/services tests/http tests/test_docs.py tests/test_arrows.py
         -m "not postgres and not slow")
fi
echo "== ruff check";  .venv/bin/ruff check .
echo "== ruff format"; .venv/bin/ruff format --check .
# The app's JavaScript: ESLint (eslint.config.js), from the locked devDependencies.
# Node is needed for this check only, never to build or run the app.
if ! command -v npm >/dev/null; then
  echo "npm is missing: install Node.js (apt-get install nodejs npm) to lint the app's JavaScript" >&2
  exit 1
fi
# mypy and ESLint run beside the tests, niced below them (the parallel pass is niced 10):
# a cold mypy is half a minute of one core, and the tests leave a fifth of the cores idle
# (waiting on servers, timers and PostgreSQL), which is what they take, not the tests'
# share (some tests bound latencies).
# Their output is shown, and their failure fails the run, once the tests are done.
lint_log=$(mktemp)
trap 'rm -f "$lint_log"' EXIT
(
  set -e
  echo "== mypy"; nice -n 19 .venv/bin/mypy
  echo "== eslint"
  # npm ci (a clean node_modules) only when the lock file changed since the last one.
  if [ ! node_modules/.package-lock.json -nt package-lock.json ]; then
    nice -n 19 npm ci --no-audit --no-fund --silent
  fi
  nice -n 19 npx eslint pushcore_http/webapp tests/browser/js
) >"$lint_log" 2>&1 &
lint=$!
# The whole suite: two workers more than the cores. A worker and its servers sleep much of
# the time (on a server, a timer or PostgreSQL): with three on two cores, the cores were
# only ~65% busy and the pass was bound by the workers' time, not the CPU; a fourth
# fills it (docs/benchmarks.md, "Test run time"). The in-process tests of --quick
# rarely wait: one per core.
if [ ${#tests[@]} -eq 0 ]; then
  workers=${PUSHCORE_TEST_WORKERS:-$(( $(nproc) + 2 ))}
else
  workers=${PUSHCORE_TEST_WORKERS:-$(nproc)}
fi
status=0
if [ ${#tests[@]} -eq 0 ] && [ $# -eq 0 ]; then
  # The whole suite: the parallel pass, then the tests that bound timings (marked
  # serial), one worker a core. PUSHCORE_SERIAL=beside runs them at the normal
  # priority beside the parallel pass niced (1.5 minutes less), but on 2 cores that
  # failed three timing bounds in a clean-clone run (2026-11-27: a /readyz at 1.13 s,
  # the hammering ratio, the sign-in timing): the parallel pass has timing-sensitive
  # tests too, and a niced worker still takes a core the kernel has idle.
  # Only the files holding a serial mark are collected (collecting all costs 6 CPU s).
  serial_files=$(grep -rlE --include='test_*.py' 'mark\.serial' tests | sort || true)
  if [ "${PUSHCORE_SERIAL:-after}" = "after" ]; then
    echo "== pytest (parallel)"
    .venv/bin/pytest -n "$workers" --dist loadgroup -m "not serial" || status=$?
    wait "$lint" || status=$?
    cat "$lint_log"
    if [ "$status" -eq 0 ]; then
      # One worker a core, and only these: most of them wait (on a stopped PostgreSQL, a
      # kill, a worker's poll) and use a tenth of a core, so two at once fit in the two
      # cores where the parallel pass beside them did not. The tests that each keep a core
      # busy (two floods, two kills mid-run) are one xdist group, `busy`, one after the
      # other. 115 s alone, about 60-70 s so.
      echo "== pytest (timing bounds, one worker a core)"
      # shellcheck disable=SC2086  # one file name a word
      .venv/bin/pytest -n "${PUSHCORE_SERIAL_WORKERS:-$(nproc)}" --dist loadgroup \
        -m serial $serial_files || status=$?
    fi
  else
    serial_log=$(mktemp)
    # shellcheck disable=SC2086  # one file name a word
    .venv/bin/pytest -p no:xdist -m serial $serial_files >"$serial_log" 2>&1 &
    serial=$!
    # A background job of a script ignores Ctrl-C: stopped here when the script ends early.
    trap 'kill "$serial" 2>/dev/null || true; rm -f "$lint_log" "$serial_log"' EXIT
    echo "== pytest (parallel, niced, beside the timing bounds)"
    nice -n 10 .venv/bin/pytest -n "$workers" --dist loadgroup -m "not serial" || status=$?
    wait "$lint" || status=$?
    cat "$lint_log"
    wait "$serial" || status=$?
    echo "== pytest (timing bounds, beside the parallel pass)"
    cat "$serial_log"
  fi
else
  echo "== pytest";    .venv/bin/pytest -n "$workers" --dist loadgroup \
                         ${tests[@]+"${tests[@]}"} "$@" || status=$?
  wait "$lint" || status=$?
  cat "$lint_log"
fi
exit "$status"
