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

# Runs golangci-lint (pinned in hack/tools/lint, built once into the cache)
# with .golangci.yml on the main module, or on the module in the folder given.
#
#   hack/verify-lint.sh            # the repository
#   hack/verify-lint.sh DIR        # another module (the tests of this script use it)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS=${REPO_ROOT}/hack/tools/lint
VERSION=$(sed -n 's|^\tgithub.com/golangci/golangci-lint/v2 \(v[^ ]*\).*|\1|p' "${TOOLS}/go.mod")
[[ -n "${VERSION}" ]] || { echo "hack/tools/lint/go.mod does not pin golangci-lint" >&2; exit 1; }
CACHE=${OPENVPA_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/openvpa}/golangci-lint-${VERSION}-$(go env GOVERSION)
BIN=${CACHE}/golangci-lint
if [[ ! -x "${BIN}" ]]; then
  mkdir -p "${CACHE}"
  echo "building golangci-lint ${VERSION} into ${CACHE} (once)"
  GOWORK=off GOFLAGS=-mod=readonly go build -C "${TOOLS}" -trimpath -o "${BIN}.tmp" github.com/golangci/golangci-lint/v2/cmd/golangci-lint
  mv -f "${BIN}.tmp" "${BIN}"
fi
cd "${1:-${REPO_ROOT}}"
"${BIN}" run --config "${REPO_ROOT}/.golangci.yml" ./...
