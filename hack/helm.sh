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

# Runs helm, pinned in hack/tools/helm/go.mod and built once into the cache
# (${OPENVPA_CACHE:-~/.cache/openvpa}/helm-<version>-<go version>/helm).
#
#   hack/helm.sh lint deploy/charts/vertical-pod-autoscaler
#   HELM_PATH_ONLY=1 hack/helm.sh   # build if needed and print the binary's path
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS=${REPO_ROOT}/hack/tools/helm
VERSION=$(sed -n 's|^require helm.sh/helm/v3 \(v[^ ]*\).*|\1|p; s|^\thelm.sh/helm/v3 \(v[^ ]*\).*|\1|p' "${TOOLS}/go.mod" | head -1)
[[ -n "${VERSION}" ]] || { echo "hack/tools/helm/go.mod does not pin helm.sh/helm/v3" >&2; exit 1; }
CACHE=${OPENVPA_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/openvpa}/helm-${VERSION}-$(go env GOVERSION)
BIN=${CACHE}/helm
if [[ ! -x "${BIN}" ]]; then
  mkdir -p "${CACHE}"
  echo "building helm ${VERSION} into ${CACHE} (once)" >&2
  GOWORK=off GOFLAGS=-mod=readonly go build -C "${TOOLS}" -trimpath -o "${BIN}.tmp.$$" helm.sh/helm/v3/cmd/helm
  mv -f "${BIN}.tmp.$$" "${BIN}"
fi
if [[ -n "${HELM_PATH_ONLY:-}" ]]; then
  echo "${BIN}"
  exit 0
fi
exec "${BIN}" "$@"
