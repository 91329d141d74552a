#!/usr/bin/env bash
# Copyright The OpenVPA Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

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
