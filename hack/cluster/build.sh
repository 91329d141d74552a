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

# Builds the local control plane's binaries from the pinned tools modules under hack/cluster/tools
# into a cache folder outside the clone (see lib.sh: BIN_DIR), keyed by a hash of those modules.
# Binaries that are already there are not rebuilt, so a warm run does nothing.
#
#   hack/cluster/build.sh          # build what is missing
#   hack/cluster/build.sh --print  # print the bin folder
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ "${1:-}" == "--print" ]]; then
  echo "${BIN_DIR}"
  exit 0
fi

export GOWORK=off CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"
GO=${GO:-go}

# tool_of prints the tools module that builds a binary, and package_of its main package.
tool_of() {
  case "$1" in
    etcd | kwok | metrics-server) echo "$1" ;;
    containerd | containerd-shim-runc-v2 | ctr) echo containerd ;;
    *) echo k8s ;;
  esac
}
package_of() {
  case "$1" in
    etcd) echo go.etcd.io/etcd/server/v3 ;;
    kwok) echo sigs.k8s.io/kwok/cmd/kwok ;;
    metrics-server) echo sigs.k8s.io/metrics-server/cmd/metrics-server ;;
    containerd | containerd-shim-runc-v2 | ctr) echo "github.com/containerd/containerd/v2/cmd/$1" ;;
    *) echo "k8s.io/kubernetes/cmd/$1" ;;
  esac
}

# The versions in lib.sh go into ldflags and the docs; refuse to build if the pins disagree.
check_pins() {
  local tool module version
  while read -r tool module version; do
    grep -qE "^[[:space:]]*(require )?${module} ${version}( |\$)" "${TOOLS_DIR}/${tool}/go.mod" ||
      die "${TOOLS_DIR}/${tool}/go.mod does not pin ${module} ${version} (lib.sh and the tools modules disagree)"
  done <<PINS
k8s k8s.io/kubernetes ${K8S_VERSION}
etcd go.etcd.io/etcd/server/v3 ${ETCD_VERSION}
kwok sigs.k8s.io/kwok ${KWOK_VERSION}
metrics-server sigs.k8s.io/metrics-server ${METRICS_SERVER_VERSION}
containerd github.com/containerd/containerd/v2 ${CONTAINERD_VERSION}
PINS
}

k8s_ldflags() {
  local minor=${K8S_VERSION#v1.} flags="-s -w" pkg
  minor=${minor%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X ${pkg}.gitVersion=${K8S_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
    flags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
  done
  echo "${flags}"
}

# output_of prints the file name go build gives a main package's binary: its last path element,
# or the one before a major version suffix (go.etcd.io/etcd/server/v3 builds "server").
output_of() {
  local pkg=$1 base=${1##*/}
  if [[ ${base} =~ ^v[0-9]+$ ]]; then
    pkg=${pkg%/*}
    base=${pkg##*/}
  fi
  echo "${base}"
}

# build_module <tools module> <binary>...: builds the binaries of one tools module with a single
# go build, so the packages they share are compiled once and the rest, links included, run in
# parallel. The binaries go to a temporary folder beside BIN_DIR and are then renamed into place,
# so an interrupted build never leaves a truncated binary behind.
#
# Kubernetes is the long pole. The other modules pin other versions of the Kubernetes libraries
# and share little with it, so they build at a lower priority: on the CPU it leaves idle,
# without delaying it.
build_module() {
  local tool=$1 ldflags="-s -w" name tmp start=${SECONDS} pkgs=() priority=() tags=()
  shift
  case "${tool}" in
    k8s) ldflags=$(k8s_ldflags) ;;
    containerd)
      # Without cgo: no btrfs, devmapper or zfs snapshotters (the node uses overlayfs or native).
      ldflags+=" -X github.com/containerd/containerd/v2/version.Version=${CONTAINERD_VERSION}"
      tags=(-tags no_btrfs,no_devmapper,no_zfs)
      priority=(nice -n 10)
      ;;
    *) priority=(nice -n 10) ;;
  esac
  for name in "$@"; do
    pkgs+=("$(package_of "${name}")")
  done
  tmp=$(mktemp -d "${BIN_DIR}/.build-${tool}.XXXXXX")
  if ! "${priority[@]}" "${GO}" build -C "${TOOLS_DIR}/${tool}" -trimpath "${tags[@]}" -ldflags "${ldflags}" \
    -o "${tmp}/" "${pkgs[@]}"; then
    rm -rf "${tmp}"
    return 1
  fi
  for name in "$@"; do
    mv -f "${tmp}/$(output_of "$(package_of "${name}")")" "${BIN_DIR}/${name}"
  done
  rm -rf "${tmp}"
  log "built $* in $((SECONDS - start))s"
}

# missing prints the binaries that are not in BIN_DIR yet.
missing() {
  local name
  for name in "${BINARIES[@]}"; do
    [[ -x "${BIN_DIR}/${name}" ]] || echo "${name}"
  done
}

main() {
  local todo=() name tool start=${SECONDS} rc=0 pid pids=()
  mapfile -t todo < <(missing)
  if [[ ${#todo[@]} -eq 0 ]]; then
    return 0
  fi
  check_pins
  mkdir -p "${BIN_DIR}"
  # Two cluster-up runs at once (parallel test packages) must not build twice: take turns, and
  # build only what the other one did not.
  exec 9>"${BIN_DIR}/.build.lock"
  flock 9
  # Left by an interrupted build; none runs now, since this one holds the lock.
  rm -rf "${BIN_DIR}"/.build-*.*
  mapfile -t todo < <(missing)
  if [[ ${#todo[@]} -eq 0 ]]; then
    return 0
  fi
  log "building ${todo[*]} into ${BIN_DIR} (a cold build takes several minutes)"
  # One go build per tools module, all at once.
  for tool in k8s etcd kwok metrics-server containerd; do
    local binaries=()
    for name in "${todo[@]}"; do
      if [[ "$(tool_of "${name}")" == "${tool}" ]]; then
        binaries+=("${name}")
      fi
    done
    ((${#binaries[@]} > 0)) || continue
    build_module "${tool}" "${binaries[@]}" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "${pid}" || rc=$?
  done
  [[ ${rc} -eq 0 ]] || die "build failed (exit ${rc})"
  log "binaries ready in ${BIN_DIR} after $((SECONDS - start))s"
}

main "$@"
