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
# The app's files are package data: every one in the tree must be in the wheel.
expected=$(cd "$root/pushcore_http/webapp" && find . -type f ! -name '.*' | sed 's|^\./||' | sort)
shipped=$(cd "$out" && venv/bin/python -c \
  'from pushcore_http.routes.web_app import assets; print("\n".join(sorted(assets())))')
[ "$expected" = "$shipped" ] || {
  echo "the wheel's app files differ from pushcore_http/webapp:" >&2
  diff <(echo "$expected") <(echo "$shipped") >&2
  exit 1
}
echo "== dist ok: $(cd "$out/dist" && ls)"
