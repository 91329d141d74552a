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

# Builds upstream's recommender (k8s.io/autoscaler/vertical-pod-autoscaler, the version pinned in
# hack/tools/upstream-vpa/go.mod) once into the cache and prints its path, for side-by-side
# measurements with hack/scale-test:
#
#   go run ./hack/scale-test --recommender="$(hack/upstream-vpa.sh)" ...
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS=${REPO_ROOT}/hack/tools/upstream-vpa
MODULE=k8s.io/autoscaler/vertical-pod-autoscaler
VERSION=$(sed -n "s|^\t${MODULE} \(v[^ ]*\).*|\1|p; s|^require ${MODULE} \(v[^ ]*\).*|\1|p" "${TOOLS}/go.mod" | head -1)
[[ -n "${VERSION}" ]] || { echo "hack/tools/upstream-vpa/go.mod does not pin ${MODULE}" >&2; exit 1; }
CACHE=${OPENVPA_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/openvpa}/upstream-vpa-${VERSION}-$(go env GOVERSION)
BIN=${CACHE}/recommender
if [[ ! -x "${BIN}" ]]; then
  mkdir -p "${CACHE}"
  echo "building upstream's recommender ${VERSION} into ${CACHE} (once)" >&2
  GOWORK=off GOFLAGS=-mod=readonly go build -C "${TOOLS}" -trimpath -o "${BIN}.tmp.$$" "${MODULE}/pkg/recommender"
  mv -f "${BIN}.tmp.$$" "${BIN}"
fi
echo "${BIN}"
