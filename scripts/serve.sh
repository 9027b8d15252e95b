#!/usr/bin/env bash
# Set up and start pushcore on the embedded default: SQLite in ./data, no configuration.
# Only what SQLite needs is installed (PostgreSQL is the [postgres] extra).
# Extra arguments go to `pushctl serve` (e.g. --port 9000 or --data-dir /srv/pushcore);
# a relative --data-dir is relative to where you run it, as for pushctl itself.
source "$(dirname "$0")/_venv.sh" ""
exec "$venv/bin/pushctl" serve "$@"
