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

# Regenerates the pinned tools modules under hack/cluster/tools/ (go.mod and go.sum for each).
# Only needed when a version changes; the result is committed, so builds never resolve versions.
#
#   hack/cluster/tools/pin.sh                       # pin the versions below (all five modules)
#   hack/cluster/tools/pin.sh kwok                  # only one of k8s, etcd, kwok, metrics-server, containerd
#   K8S_VERSION=v1.37.3 hack/cluster/tools/pin.sh   # bump Kubernetes (staging modules follow)
set -euo pipefail

TOOLS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
K8S_VERSION=${K8S_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-v0.8.0}
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
GO_DIRECTIVE=${GO_DIRECTIVE:-1.26.0}

export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0

# new_module <dir> <module path>: starts an empty go.mod
new_module() {
  rm -f "$1/go.mod" "$1/go.sum"
  printf 'module %s\n\ngo %s\n' "$2" "${GO_DIRECTIVE}" >"$1/go.mod"
}

pin_k8s() {
  local dir=${TOOLS_DIR}/k8s staging=v0.${K8S_VERSION#v1.} gomod
  go mod download k8s.io/kubernetes@"${K8S_VERSION}"
  gomod=$(go mod download -json k8s.io/kubernetes@"${K8S_VERSION}" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  new_module "${dir}" github.com/openvpa/openvpa/hack/cluster/tools/k8s
  {
    printf '\n// k8s.io/kubernetes points its staging modules at ./staging; use the published ones instead.\nreplace (\n'
    sed -n '/^replace (/,/^)/p' "${gomod}" |
      awk -v v="${staging}" '$2 == "=>" && $3 ~ /^\.\/staging\// && $1 !~ /sample-/ { printf "\t%s => %s %s\n", $1, $1, v }'
    printf ')\n'
  } >>"${dir}/go.mod"
  (cd "${dir}" && go get -tool \
    k8s.io/kubernetes/cmd/kube-apiserver@"${K8S_VERSION}" \
    k8s.io/kubernetes/cmd/kube-controller-manager@"${K8S_VERSION}" \
    k8s.io/kubernetes/cmd/kube-scheduler@"${K8S_VERSION}" \
    k8s.io/kubernetes/cmd/kubectl@"${K8S_VERSION}" \
    k8s.io/kubernetes/cmd/kubelet@"${K8S_VERSION}" \
    k8s.io/kubernetes/cmd/kube-proxy@"${K8S_VERSION}" && go mod tidy)
}

pin_etcd() {
  local dir=${TOOLS_DIR}/etcd m
  new_module "${dir}" github.com/openvpa/openvpa/hack/cluster/tools/etcd
  # The server module replaces its siblings with relative paths, so `go install …@version` refuses;
  # requiring every etcd module at the same version gives the same build list.
  local mods=()
  for m in api/v3 client/pkg/v3 client/v3 pkg/v3; do mods+=("go.etcd.io/etcd/${m}@${ETCD_VERSION}"); done
  (cd "${dir}" && go get -tool go.etcd.io/etcd/server/v3@"${ETCD_VERSION}" && go get "${mods[@]}" && go mod tidy)
}

pin_plain() { # dir module package version
  new_module "$1" "$2"
  (cd "$1" && go get -tool "$3@$4" && go mod tidy)
}

pin_containerd() {
  local dir=${TOOLS_DIR}/containerd m=github.com/containerd/containerd/v2
  new_module "${dir}" github.com/openvpa/openvpa/hack/cluster/tools/containerd
  (cd "${dir}" && go get -tool "${m}/cmd/containerd@${CONTAINERD_VERSION}" \
    "${m}/cmd/containerd-shim-runc-v2@${CONTAINERD_VERSION}" "${m}/cmd/ctr@${CONTAINERD_VERSION}" && go mod tidy)
}

if [[ $# -eq 0 ]]; then set -- k8s etcd kwok metrics-server containerd; fi
for tool in "$@"; do
  case "${tool}" in
    k8s) pin_k8s ;;
    etcd) pin_etcd ;;
    kwok) pin_plain "${TOOLS_DIR}/kwok" github.com/openvpa/openvpa/hack/cluster/tools/kwok sigs.k8s.io/kwok/cmd/kwok "${KWOK_VERSION}" ;;
    metrics-server)
      pin_plain "${TOOLS_DIR}/metrics-server" github.com/openvpa/openvpa/hack/cluster/tools/metrics-server \
        sigs.k8s.io/metrics-server/cmd/metrics-server "${METRICS_SERVER_VERSION}"
      ;;
    containerd) pin_containerd ;;
    *)
      echo "unknown tool ${tool}; want k8s, etcd, kwok, metrics-server or containerd" >&2
      exit 1
      ;;
  esac
done
echo "pinned ($*): kubernetes ${K8S_VERSION}, etcd ${ETCD_VERSION}, kwok ${KWOK_VERSION}, metrics-server ${METRICS_SERVER_VERSION}, containerd ${CONTAINERD_VERSION}"
