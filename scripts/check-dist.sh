#!/usr/bin/env bash
# Build the sdist and the wheel, check them, and install the wheel in a clean virtual
# environment where `pushctl` must start and use the files the package ships (migrations).
source "$(dirname "$0")/_venv.sh" dev,postgres
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "== build";        "$root/.venv/bin/python" -m build --sdist --wheel --outdir "$out/dist" "$root" >/dev/null
echo "== twine check";  "$root/.venv/bin/twine" check --strict "$out"/dist/*
echo "== clean install"
python3 -m venv "$out/venv"
"$out/venv/bin/pip" install -q --disable-pip-version-check "$out"/dist/*.whl
(cd "$out" && venv/bin/pushctl --help >/dev/null)
# A local command opens (and migrates) a database from the wheel's own files.
(cd "$out" && venv/bin/pushctl --data-dir "$out/data" accounts set-plan ci pro >/dev/null)
echo "== dist ok: $(cd "$out/dist" && ls)"
