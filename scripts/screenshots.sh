#!/usr/bin/env bash
# Retake the app's screenshots in docs/img (docs/app.md shows them) with the browser tests.
source "$(dirname "$0")/_venv.sh" dev,postgres
cd "$root"
PUSHCORE_SCREENSHOTS="$root/docs/img" .venv/bin/pytest -q tests/browser/test_screenshots.py "$@"
