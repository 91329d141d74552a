#!/usr/bin/env bash
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
    *) echo k8s ;;
  esac
}
package_of() {
  case "$1" in
    etcd) echo go.etcd.io/etcd/server/v3 ;;
    kwok) echo sigs.k8s.io/kwok/cmd/kwok ;;
    metrics-server) echo sigs.k8s.io/metrics-server/cmd/metrics-server ;;
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

# build <binary>...: builds each missing binary in order, writing to a temporary name first so an
# interrupted build never leaves a truncated binary behind.
build() {
  local name tool ldflags start
  for name in "$@"; do
    [[ -x "${BIN_DIR}/${name}" ]] && continue
    tool=$(tool_of "${name}")
    ldflags="-s -w"
    [[ "${tool}" == k8s ]] && ldflags=$(k8s_ldflags)
    start=${SECONDS}
    "${GO}" build -C "${TOOLS_DIR}/${tool}" -trimpath -ldflags "${ldflags}" \
      -o "${BIN_DIR}/.${name}.tmp" "$(package_of "${name}")"
    mv -f "${BIN_DIR}/.${name}.tmp" "${BIN_DIR}/${name}"
    log "built ${name} in $((SECONDS - start))s"
  done
}

main() {
  local missing=() name
  for name in "${BINARIES[@]}"; do
    [[ -x "${BIN_DIR}/${name}" ]] || missing+=("${name}")
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    return 0
  fi
  check_pins
  mkdir -p "${BIN_DIR}"
  # Two cluster-up runs at once (parallel test packages) must not build twice.
  exec 9>"${BIN_DIR}/.build.lock"
  flock 9
  log "building ${missing[*]} into ${BIN_DIR} (a cold build takes several minutes)"
  local start=${SECONDS} rc=0 k8s_pid other_pid
  # Kubernetes is the long pole; etcd, kwok and metrics-server build beside it.
  build kube-apiserver kube-controller-manager kube-scheduler kubectl &
  k8s_pid=$!
  build etcd kwok metrics-server &
  other_pid=$!
  wait "${k8s_pid}" || rc=$?
  wait "${other_pid}" || rc=$?
  [[ ${rc} -eq 0 ]] || die "build failed (exit ${rc})"
  log "binaries ready in ${BIN_DIR} after $((SECONDS - start))s"
}

main "$@"
