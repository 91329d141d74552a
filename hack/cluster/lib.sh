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

# shellcheck shell=bash disable=SC2034 # the variables are for the scripts that source this file
# Shared settings for the hack/cluster scripts. Sourced, never run.
#
# Every setting can be overridden from the environment, so a second cluster can run beside the
# default one (another CLUSTER_DIR and other ports).

CLUSTER_HACK_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "${CLUSTER_HACK_DIR}/../.." && pwd)
TOOLS_DIR=${CLUSTER_HACK_DIR}/tools

# Versions. The authoritative pins are the go.mod files under tools/; these name them for
# ldflags and messages and must agree with them (build.sh checks).
K8S_VERSION=v1.37.2
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
METRICS_SERVER_VERSION=v0.8.0
CONTAINERD_VERSION=v2.4.2

# Runtime state: PKI, etcd data, logs, PID files, kubeconfigs.
CLUSTER_DIR=${CLUSTER_DIR:-${REPO_ROOT}/_output/cluster}
# Absolute, because down.sh recognises the cluster's processes by this path in their arguments.
CLUSTER_DIR=$(realpath -m "${CLUSTER_DIR}")
ETCD_PORT=${ETCD_PORT:-2379}
ETCD_PEER_PORT=${ETCD_PEER_PORT:-2380}
APISERVER_PORT=${APISERVER_PORT:-6443}
KCM_PORT=${KCM_PORT:-10257}
SCHEDULER_PORT=${SCHEDULER_PORT:-10259}
KWOK_PORT=${KWOK_PORT:-10247}
METRICS_SERVER_PORT=${METRICS_SERVER_PORT:-4443}
CLUSTER_NODES=${CLUSTER_NODES:-2}
# The controller manager's client rate: its default (20 QPS, burst 30) makes creating thousands of
# Deployments' ReplicaSets and pods take half an hour (hack/scale-test).
KCM_API_QPS=${KCM_API_QPS:-200}
SERVICE_CIDR=10.96.0.0/16

# The real node (node.sh). A second cluster beside the default one needs other names and
# addresses for it, or REAL_NODE=false.
REAL_NODE=${REAL_NODE:-true}
NODE_NAME=${NODE_NAME:-openvpa-node}
NODE_NETNS=${NODE_NETNS:-openvpa-node}
NODE_HOST_IF=${NODE_HOST_IF:-ovpa-node0}
NODE_HOST_IP=${NODE_HOST_IP:-10.200.0.1}
NODE_IP=${NODE_IP:-10.200.0.2}
NODE_POD_CIDR=${NODE_POD_CIDR:-10.244.0.0/24}
# containerd's default sandbox image for this version; make images builds it.
NODE_SANDBOX_IMAGE=${NODE_SANDBOX_IMAGE:-registry.k8s.io/pause:3.10.2}

# Components in start order; cluster-down stops them in reverse. The last four are the real
# node's (node.sh): the API server forwarder, containerd, the kubelet and kube-proxy.
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok metrics-server socat containerd kubelet kube-proxy)
# The real node's binaries (node.sh): kubelet and kube-proxy, containerd with its runc shim and ctr.
NODE_BINARIES=(kubelet kube-proxy containerd containerd-shim-runc-v2 ctr)
# What build.sh builds: the real node's binaries only when the real node runs (REAL_NODE=false, as
# make demo and a second cluster use, skips containerd's build and the kubelet's link).
BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok metrics-server kubectl)
if [[ "${REAL_NODE}" == true ]]; then
  BINARIES+=("${NODE_BINARIES[@]}")
fi

# Bump when build.sh changes how binaries are built (flags, ldflags), so caches are not reused.
BUILD_REVISION=1

# cache_key prints a short hash of everything that decides the binaries' content: the pinned
# tools modules, the Go version and the build revision.
cache_key() {
  {
    cat "${TOOLS_DIR}"/*/go.mod "${TOOLS_DIR}"/*/go.sum
    echo "${BUILD_REVISION} $(${GO:-go} env GOVERSION GOOS GOARCH)"
  } | sha256sum | cut -c1-16
}

CACHE_ROOT=${OPENVPA_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/openvpa}
# Computed once (it runs go env); scripts that call each other pass it on in CLUSTER_BIN_DIR.
BIN_DIR=${CLUSTER_BIN_DIR:-${CACHE_ROOT}/cluster-$(cache_key)/bin}
export CLUSTER_BIN_DIR=${BIN_DIR}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() {
  printf 'ERROR: %s\n' "$*" >&2
  exit 1
}
