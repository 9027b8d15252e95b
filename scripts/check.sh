#!/usr/bin/env bash
# Set up and run every check: ruff (lint and format), mypy --strict, the whole test suite.
# Extra arguments go to pytest (e.g. -k keys, or -m "not slow").
source "$(dirname "$0")/_venv.sh" dev,postgres
cd "$root"
echo "== ruff check";  .venv/bin/ruff check .
echo "== ruff format"; .venv/bin/ruff format --check .
echo "== mypy";        .venv/bin/mypy
echo "== pytest";      .venv/bin/pytest "$@"
