# Sourced by serve.sh and check.sh: creates $root/.venv with Python 3.11+ and installs the
# project with the extras named in $1 ("" for none: what the SQLite default needs).
# It leaves the working directory alone, so relative paths given to the caller keep
# their meaning.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
extras=${1:-}
if [ ! -x "$venv/bin/python" ]; then
  py=""
  for candidate in python3.11 python3.12 python3.13 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
       "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
      py=$candidate; break
    fi
  done
  [ -n "$py" ] || { echo "pushcore needs Python 3.11 or newer" >&2; exit 1; }
  echo "pushcore: first run: creating a virtual environment in $venv (with $py)" >&2
  "$py" -m venv "$venv"
fi
# Reinstall only when pyproject.toml changed since the last install of these extras.
stamp="$venv/.pushcore-installed-${extras:-base}"
if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
  target=$root
  [ -z "$extras" ] || target="$root[$extras]"
  echo "pushcore: installing pushcore${extras:+[$extras]} and its dependencies into $venv" \
       "(a minute or two the first time)" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  # pyproject.toml's package-dir makes this a plain .pth editable install (no notice box).
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$target"
  touch "$stamp"
  echo "pushcore: installed" >&2
fi
