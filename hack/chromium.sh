#!/usr/bin/env bash
# hack/chromium.sh: prints the path of a headless-capable Chromium, installing
# the Debian package `chromium` when it is missing. The HTML report test of
# kubectl-vpa (kubectl-vpa/report) renders the page with it.
set -euo pipefail

find_chromium() {
  local c
  for c in chromium chromium-browser; do
    if command -v "$c" >/dev/null 2>&1; then
      command -v "$c"
      return 0
    fi
  done
  return 1
}

if find_chromium; then
  exit 0
fi
log="${TMPDIR:-/tmp}/openvpa-chromium-apt.log"
echo "installing chromium (Debian package); log in ${log}" >&2
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >"${log}" 2>&1 ||
  { DEBIAN_FRONTEND=noninteractive apt-get update >>"${log}" 2>&1 &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >>"${log}" 2>&1; } ||
  { tail -20 "${log}" >&2; echo "could not install chromium" >&2; exit 1; }
find_chromium
