# Sourced by serve.sh and check.sh: creates .venv with Python 3.11+ and installs the project.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ ! -x .venv/bin/python ]; then
  py=""
  for candidate in python3.11 python3.12 python3.13 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      py=$candidate; break
    fi
  done
  [ -n "$py" ] || { echo "pushcore needs Python 3.11 or newer" >&2; exit 1; }
  "$py" -m venv .venv
fi
# Reinstall only when pyproject.toml changed since the last install.
stamp=.venv/.pushcore-installed-$1
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$1]"
  touch "$stamp"
fi
