#!/usr/bin/env bash
# Set up and run every check: ruff (lint and format), mypy --strict, the whole test suite
# on every core (pytest-xdist; tests/README.md says what a test must do to run beside others).
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
echo "== mypy";        .venv/bin/mypy
# The app's JavaScript: ESLint (eslint.config.js), from the locked devDependencies.
# Node is needed for this check only, never to build or run the app.
echo "== eslint"
if command -v npm >/dev/null; then
  npm ci --no-audit --no-fund --silent
  npx eslint pushcore_http/webapp tests/browser/js
else
  echo "npm is missing: install Node.js (apt-get install nodejs npm) to lint the app's JavaScript" >&2
  exit 1
fi
if [ ${#tests[@]} -eq 0 ] && [ $# -eq 0 ]; then
  # The whole suite: in parallel, then the tests that bound timings, alone (another
  # worker's load would be what they measure).
  echo "== pytest (parallel)"
  .venv/bin/pytest -n "${PUSHCORE_TEST_WORKERS:-auto}" --dist loadgroup -m "not serial"
  echo "== pytest (timing bounds, alone)"
  .venv/bin/pytest -p no:xdist -m serial
else
  echo "== pytest";    .venv/bin/pytest -n "${PUSHCORE_TEST_WORKERS:-auto}" --dist loadgroup \
                         ${tests[@]+"${tests[@]}"} "$@"
fi
