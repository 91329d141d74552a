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

# Checks that every Go module of the repository (or the modules in the
# folders given) is tidy: go.mod and go.sum are what `go mod tidy` makes them,
# with no unused or wrongly marked requirements. Fix with `go mod tidy` in the
# module's folder.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ $# -eq 0 ]]; then
  mapfile -t dirs < <(cd "${REPO_ROOT}" && git ls-files -- '*go.mod' ':!:**/testdata/**' | xargs -n1 dirname)
  dirs=("${dirs[@]/#/${REPO_ROOT}/}")
else
  dirs=("$@")
fi
failed=0
for dir in "${dirs[@]}"; do
  if ! diff=$(cd "${dir}" && GOWORK=off GOFLAGS=-mod=mod go mod tidy -diff 2>&1); then
    echo "${dir#"${REPO_ROOT}"/}: go.mod or go.sum is not tidy; run go mod tidy there:" >&2
    echo "${diff}" >&2
    failed=1
  fi
done
exit "${failed}"
