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

# Regenerates hack/flagsdocs/testdata/upstream-flags.tsv: every flag of upstream VPA's three
# components with its type and default, read from the docs/flags.md of the upstream module
# pinned in hack/tools/upstream-vpa/go.mod. The flag parity test in hack/flagsdocs fails when
# an upstream flag is missing here or has another default, so following a new upstream release
# is: bump the pin, run this script, run the test.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS=${ROOT}/hack/tools/upstream-vpa
MODULE=k8s.io/autoscaler/vertical-pod-autoscaler
OUT=${ROOT}/hack/flagsdocs/testdata/upstream-flags.tsv

VERSION=$(cd "${TOOLS}" && GOWORK=off go list -m -f '{{.Version}}' "${MODULE}")
(cd "${TOOLS}" && GOWORK=off go mod download "${MODULE}")
DIR=$(cd "${TOOLS}" && GOWORK=off go list -m -f '{{.Dir}}' "${MODULE}")
[[ -f "${DIR}/docs/flags.md" ]] || { echo "no docs/flags.md in ${MODULE}@${VERSION}" >&2; exit 1; }

mkdir -p "$(dirname "${OUT}")"
{
  echo "# ${MODULE} ${VERSION}, docs/flags.md; regenerate with hack/update-upstream-flags.sh"
  echo "# component	flag	type	default"
  # Sections are headed "# What are the parameters to VPA <component>?"; rows are
  # "| `name` | type | default | description |". Quotes around string defaults are dropped.
  awk -F'|' '
    /^# What are the parameters to VPA / { c = $0; sub(/^# What are the parameters to VPA /, "", c); sub(/\?.*$/, "", c); next }
    c != "" && /^\| `/ {
      name = $2; gsub(/[ `]/, "", name)
      type = $3; gsub(/ /, "", type)
      def = $4; sub(/^ +/, "", def); sub(/ +$/, "", def)
      if (def ~ /^".*"$/) def = substr(def, 2, length(def) - 2)
      gsub(/\\"/, "\"", def)
      printf "%s\t%s\t%s\t%s\n", c, name, type, def
    }' "${DIR}/docs/flags.md" | LC_ALL=C sort
} >"${OUT}.tmp"
mv "${OUT}.tmp" "${OUT}"
