#!/usr/bin/env bash
# Set up and start pushcore on the embedded default: SQLite in ./data, no configuration.
# Extra arguments go to `pushctl serve` (e.g. --port 9000).
source "$(dirname "$0")/_venv.sh" postgres
exec .venv/bin/pushctl serve "$@"
