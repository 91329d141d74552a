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

# Starts the local control plane on loopback: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok (fake nodes and kubelets) and metrics-server behind the aggregator.
#
#   hack/cluster/up.sh     (or: make cluster-up)
#   export KUBECONFIG=$PWD/_output/cluster/kubeconfig
#
# Idempotent: components that are already running are kept, the others are started, and every
# step waits for readiness. Builds missing binaries first (see build.sh). On failure it prints the
# end of the failing component's log. State lives in CLUSTER_DIR (default _output/cluster);
# ports come from the environment (see lib.sh), so a second cluster can run beside the first.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=proc.sh
source "${CLUSTER_HACK_DIR}/proc.sh"
# shellcheck source-path=SCRIPTDIR source=node.sh
source "${CLUSTER_HACK_DIR}/node.sh"

PKI=${CLUSTER_DIR}/pki
LOGS=${CLUSTER_DIR}/logs
PIDS=${CLUSTER_DIR}/pids
ADMIN_KUBECONFIG=${CLUSTER_DIR}/kubeconfig
START_US=${EPOCHREALTIME/./}

elapsed() {
  local now=${EPOCHREALTIME/./}
  printf '%d.%01ds' $(((now - START_US) / 1000000)) $((((now - START_US) / 100000) % 10))
}
step() { printf '[%7s] %s\n' "$(elapsed)" "$*"; }

kubectl() { "${BIN_DIR}/kubectl" --kubeconfig="${ADMIN_KUBECONFIG}" "$@"; }

# fail_with_log <component> <message>: prints the end of the component's log and exits.
fail_with_log() {
  local log=${LOGS}/$1.log
  if [[ -s "${log}" ]]; then
    printf '%s\n' "----- last 40 lines of ${log} -----" >&2
    tail -n 40 "${log}" >&2
    printf '%s\n' "-----" >&2
  fi
  die "$2 (full log: ${log})"
}

# install_packages <package...>: installs Debian packages with apt-get, updating the package
# lists first only when the install fails (they may be stale on a fresh machine).
install_packages() {
  step "installing $* (Debian packages)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >"${LOGS}/apt.log" 2>&1 ||
    { DEBIAN_FRONTEND=noninteractive apt-get update >>"${LOGS}/apt.log" 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >>"${LOGS}/apt.log" 2>&1; } ||
    fail_with_log apt "could not install $*"
}

# test_packages: what the e2e tests run beside the cluster: Prometheus and promtool (e2e/history
# backfills a Prometheus with days of history and starts it per test).
test_packages() {
  command -v prometheus >/dev/null && command -v promtool >/dev/null && return 0
  install_packages prometheus
}

# running <component>: true when the PID file names the component's own process, started for
# this CLUSTER_DIR (identity, see proc.sh).
running() {
  local pidfile=${PIDS}/$1.pid
  [[ -f "${pidfile}" ]] && proc_is "$(<"${pidfile}")" "$1" "${CLUSTER_DIR}"
}

# alive <component>: true when the process in the PID file has not exited (liveness).
alive() {
  local pidfile=${PIDS}/$1.pid
  [[ -f "${pidfile}" ]] && proc_alive "$(<"${pidfile}")"
}

# start <component> <args...>: starts the component's binary in its own session, detached from
# the caller's terminal and pipes, unless it is already running. Returns once the process runs
# the binary, so that running and down.sh recognise it from then on. The binary is BIN_DIR's, or
# the one on PATH (socat); START_PREFIX, if set, runs before it and must exec it (nsenter).
START_PREFIX=()
start() {
  local name=$1 pid rc=0 bin
  shift
  if running "${name}"; then
    return 0
  fi
  bin=${BIN_DIR}/${name}
  [[ -x "${bin}" ]] || bin=$(command -v "${name}") || die "${name}: no such binary"
  # 8>&-: the component must not inherit the lock held by this script, or it would hold it forever.
  setsid "${START_PREFIX[@]}" "${bin}" "$@" </dev/null >"${LOGS}/${name}.log" 2>&1 8>&- &
  pid=$!
  echo "${pid}" >"${PIDS}/${name}.pid"
  proc_wait_exec "${pid}" "${name}" "${CLUSTER_DIR}" 60 || rc=$?
  case ${rc} in
    0) ;;
    1) fail_with_log "${name}" "${name} exited during start-up" ;;
    *)
      # Still the child forked above, so it is ours to kill.
      kill -KILL "${pid}" 2>/dev/null || true
      fail_with_log "${name}" "${name} had not started its binary after 60s"
      ;;
  esac
}

# wait_ready <component> <timeout seconds> <command...>: polls the command until it succeeds;
# fails early if the component's process has exited.
wait_ready() {
  local name=$1 timeout=$2 deadline=$((SECONDS + $2))
  shift 2
  until "$@" >/dev/null 2>&1; do
    if ! alive "${name}"; then
      fail_with_log "${name}" "${name} exited during start-up"
    fi
    if ((SECONDS >= deadline)); then
      fail_with_log "${name}" "${name} not ready after ${timeout}s"
    fi
    sleep 0.1
  done
}

# write_kubeconfig <file> <user> <cert> <key> [server] [server name]: a kubeconfig with embedded
# credentials, written atomically so readers never see half a file. The server defaults to the
# API server on loopback; a server name checks its certificate against that name instead.
write_kubeconfig() {
  local file=$1 user=$2 cert=$3 key=$4 server=${5:-https://127.0.0.1:${APISERVER_PORT}} name=${6:-}
  if [[ -f "${file}" && "${file}" -nt "${cert}" ]] && grep -qx "    server: ${server}" "${file}"; then
    return 0
  fi
  {
    cat <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: openvpa-local
  cluster:
    server: ${server}
    certificate-authority-data: $(base64 -w0 <"${PKI}/ca.crt")
KUBECONFIG
    if [[ -n "${name}" ]]; then echo "    tls-server-name: ${name}"; fi
    cat <<KUBECONFIG
users:
- name: ${user}
  user:
    client-certificate-data: $(base64 -w0 <"${cert}")
    client-key-data: $(base64 -w0 <"${key}")
contexts:
- name: openvpa-local
  context:
    cluster: openvpa-local
    user: ${user}
current-context: openvpa-local
KUBECONFIG
  } >"${file}.tmp"
  chmod 600 "${file}.tmp"
  mv -f "${file}.tmp" "${file}"
}

https_ok() { curl -sf --max-time 2 --cacert "${PKI}/ca.crt" "$@"; }

# api_get <path>: GET from the apiserver as admin, with all white space removed so the JSON can
# be matched with grep. Waits use it rather than kubectl, which costs a second per call on a busy
# machine.
api_get() {
  https_ok --cert "${PKI}/admin.crt" --key "${PKI}/admin.key" "https://127.0.0.1:${APISERVER_PORT}$1" |
    tr -d '[:space:]'
}

# nodes_ready: true when CLUSTER_NODES kwok nodes report Ready (the apiserver lists a
# condition's type before its status).
nodes_ready() {
  local n
  n=$(api_get "/api/v1/nodes?labelSelector=type%3Dkwok" | grep -o '"type":"Ready","status":"True"' | wc -l)
  ((n >= CLUSTER_NODES))
}

# reset_kwok_leases deletes the node leases of the kwok nodes. Call it only while no kwok runs: kwok
# is their only holder, it names itself anew on every start (hostname and a random UUID) and does
# not release its leases on exit, so a new kwok would otherwise treat the nodes as another kwok's
# and leave their pods alone until the old leases expire (nodeLeaseDurationSeconds, 40 s).
reset_kwok_leases() {
  local names nodes=()
  names=$(kubectl get nodes --selector type=kwok --output 'jsonpath={.items[*].metadata.name}') || return 1
  read -ra nodes <<<"${names}"
  if ((${#nodes[@]} > 0)); then
    kubectl delete lease --namespace kube-node-lease --ignore-not-found "${nodes[@]}" >/dev/null || return 1
  fi
}

# kwok_leases_held: true when every kwok node has a lease with a holder: kwok has taken the nodes
# over and acts on their pods (after reset_kwok_leases only the running kwok can have made them).
kwok_leases_held() {
  local i
  for ((i = 0; i < CLUSTER_NODES; i++)); do
    api_get "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/kwok-node-${i}" |
      grep -q '"holderIdentity":"' || return 1
  done
}

metrics_available() {
  api_get /apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io |
    grep -q '"type":"Available","status":"True"'
}

# nodes_manifest prints the fake nodes that do not exist yet. Nodes keep the status they are
# created with; kwok's node-initialize stage completes it and marks them Ready.
nodes_manifest() {
  local i name
  for ((i = 0; i < CLUSTER_NODES; i++)); do
    name=kwok-node-${i}
    if api_get "/api/v1/nodes/${name}" >/dev/null; then
      continue
    fi
    cat <<NODE
---
apiVersion: v1
kind: Node
metadata:
  name: ${name}
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
    metrics.k8s.io/resource-metrics-path: /metrics/nodes/${name}/metrics/resource
  labels:
    kubernetes.io/hostname: ${name}
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
status:
  allocatable: {cpu: "32", memory: 64Gi, pods: "110"}
  capacity: {cpu: "32", memory: 64Gi, pods: "110"}
  nodeInfo:
    kubeletVersion: ${K8S_VERSION}
    architecture: amd64
    operatingSystem: linux
NODE
  done
}

metrics_apiservice_manifest() {
  cat <<MANIFEST
apiVersion: v1
kind: Service
metadata:
  name: metrics-server
  namespace: kube-system
spec:
  type: ExternalName
  externalName: 127.0.0.1
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1beta1.metrics.k8s.io
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  caBundle: $(base64 -w0 <"${PKI}/ca.crt")
  service:
    name: metrics-server
    namespace: kube-system
    port: ${METRICS_SERVER_PORT}
MANIFEST
}

main() {
  "${CLUSTER_HACK_DIR}/build.sh"
  # Parallel callers (several test packages at once) take turns, and with down.sh; the second
  # up.sh finds the cluster running.
  lock_cluster "${CLUSTER_DIR}" 600 ||
    die "another cluster-up or cluster-down has held ${CLUSTER_DIR}/cluster-up.lock for 10 minutes"
  mkdir -p "${LOGS}" "${PIDS}"
  test_packages

  "${CLUSTER_HACK_DIR}/gencerts.sh" "${PKI}"
  write_kubeconfig "${ADMIN_KUBECONFIG}" kubernetes-admin "${PKI}/admin.crt" "${PKI}/admin.key"
  write_kubeconfig "${CLUSTER_DIR}/controller-manager.kubeconfig" system:kube-controller-manager \
    "${PKI}/controller-manager.crt" "${PKI}/controller-manager.key"
  write_kubeconfig "${CLUSTER_DIR}/scheduler.kubeconfig" system:kube-scheduler \
    "${PKI}/scheduler.crt" "${PKI}/scheduler.key"
  cat >"${CLUSTER_DIR}/cluster.env" <<ENV
# Written by hack/cluster/up.sh: where this cluster's binaries are and which ports it uses.
BIN_DIR=${BIN_DIR}
KUBECONFIG=${ADMIN_KUBECONFIG}
ETCD_PORT=${ETCD_PORT}
ETCD_PEER_PORT=${ETCD_PEER_PORT}
APISERVER_PORT=${APISERVER_PORT}
KCM_PORT=${KCM_PORT}
SCHEDULER_PORT=${SCHEDULER_PORT}
KWOK_PORT=${KWOK_PORT}
METRICS_SERVER_PORT=${METRICS_SERVER_PORT}
ENV
  step "binaries, certificates and kubeconfigs ready"

  start etcd --name openvpa --data-dir "${CLUSTER_DIR}/etcd" \
    --listen-client-urls "http://127.0.0.1:${ETCD_PORT}" --advertise-client-urls "http://127.0.0.1:${ETCD_PORT}" \
    --listen-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" --initial-advertise-peer-urls "http://127.0.0.1:${ETCD_PEER_PORT}" \
    --initial-cluster "openvpa=http://127.0.0.1:${ETCD_PEER_PORT}" \
    --unsafe-no-fsync=true --quota-backend-bytes=2147483648 --log-level=warn
  wait_ready etcd 30 curl -sf --max-time 2 "http://127.0.0.1:${ETCD_PORT}/health"
  step "etcd ready on 127.0.0.1:${ETCD_PORT}"

  # --endpoint-reconciler-type=none: the default reconciler refuses a loopback advertise address.
  # --enable-aggregator-routing stays false, or the ExternalName Service for metrics-server fails.
  start kube-apiserver --etcd-servers="http://127.0.0.1:${ETCD_PORT}" \
    --bind-address=127.0.0.1 --secure-port="${APISERVER_PORT}" --advertise-address=127.0.0.1 \
    --endpoint-reconciler-type=none \
    --tls-cert-file="${PKI}/apiserver.crt" --tls-private-key-file="${PKI}/apiserver.key" \
    --client-ca-file="${PKI}/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="${PKI}/sa.pub" --service-account-signing-key-file="${PKI}/sa.key" \
    --service-cluster-ip-range="${SERVICE_CIDR}" \
    --authorization-mode=Node,RBAC --allow-privileged=true \
    --kubelet-client-certificate="${PKI}/apiserver-kubelet-client.crt" \
    --kubelet-client-key="${PKI}/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP --kubelet-certificate-authority="${PKI}/ca.crt" \
    --requestheader-client-ca-file="${PKI}/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="${PKI}/front-proxy-client.crt" --proxy-client-key-file="${PKI}/front-proxy-client.key" \
    --enable-aggregator-routing=false --profiling=false --v=1
  wait_ready kube-apiserver 120 https_ok --cert "${PKI}/admin.crt" --key "${PKI}/admin.key" \
    "https://127.0.0.1:${APISERVER_PORT}/readyz"
  step "kube-apiserver ready on 127.0.0.1:${APISERVER_PORT}"

  # --use-service-account-credentials: each controller acts as its own ServiceAccount, as kubeadm
  # does; as system:kube-controller-manager RBAC would not let them update Deployments.
  start kube-controller-manager \
    --kubeconfig="${CLUSTER_DIR}/controller-manager.kubeconfig" \
    --authentication-kubeconfig="${CLUSTER_DIR}/controller-manager.kubeconfig" \
    --authorization-kubeconfig="${CLUSTER_DIR}/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="${KCM_PORT}" \
    --tls-cert-file="${PKI}/serving.crt" --tls-private-key-file="${PKI}/serving.key" \
    --leader-elect=false --controllers='*' --use-service-account-credentials=true \
    --service-account-private-key-file="${PKI}/sa.key" --root-ca-file="${PKI}/ca.crt" \
    --cluster-signing-cert-file="${PKI}/ca.crt" --cluster-signing-key-file="${PKI}/ca.key" \
    --service-cluster-ip-range="${SERVICE_CIDR}" --profiling=false --v=1 \
    --kube-api-qps="${KCM_API_QPS}" --kube-api-burst="$((2 * KCM_API_QPS))" \
    --concurrent-deployment-syncs=10 --concurrent-replicaset-syncs=10
  start kube-scheduler \
    --kubeconfig="${CLUSTER_DIR}/scheduler.kubeconfig" \
    --authentication-kubeconfig="${CLUSTER_DIR}/scheduler.kubeconfig" \
    --authorization-kubeconfig="${CLUSTER_DIR}/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="${SCHEDULER_PORT}" \
    --tls-cert-file="${PKI}/serving.crt" --tls-private-key-file="${PKI}/serving.key" \
    --leader-elect=false --profiling=false --v=1
  wait_ready kube-controller-manager 60 https_ok "https://127.0.0.1:${KCM_PORT}/healthz"
  wait_ready kube-scheduler 60 https_ok "https://127.0.0.1:${SCHEDULER_PORT}/healthz"
  # The ServiceAccount admission plugin rejects pods until the namespace's "default" SA exists.
  wait_ready kube-controller-manager 60 api_get /api/v1/namespaces/default/serviceaccounts/default
  step "kube-controller-manager and kube-scheduler ready"

  if ! running kwok; then
    reset_kwok_leases || fail_with_log kwok "could not delete the kwok nodes' leases left by the previous kwok"
  fi
  start kwok --kubeconfig="${ADMIN_KUBECONFIG}" --config="${CLUSTER_HACK_DIR}/conf/kwok.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-ip=127.0.0.1 --node-port="${KWOK_PORT}" --server-address="127.0.0.1:${KWOK_PORT}" \
    --tls-cert-file="${PKI}/serving.crt" --tls-private-key-file="${PKI}/serving.key"
  wait_ready kwok 30 https_ok "https://127.0.0.1:${KWOK_PORT}/healthz"
  local nodes
  nodes=$(nodes_manifest)
  if [[ -n "${nodes}" ]]; then
    kubectl create -f - >/dev/null <<<"${nodes}" || fail_with_log kwok "could not create the kwok nodes"
  fi
  wait_ready kwok 60 nodes_ready
  wait_ready kwok 60 kwok_leases_held
  step "kwok ready with ${CLUSTER_NODES} Ready nodes"

  # metrics-server requires --metric-resolution above --kubelet-request-timeout.
  start metrics-server --kubeconfig="${ADMIN_KUBECONFIG}" \
    --authentication-kubeconfig="${ADMIN_KUBECONFIG}" --authorization-kubeconfig="${ADMIN_KUBECONFIG}" \
    --bind-address=127.0.0.1 --secure-port="${METRICS_SERVER_PORT}" \
    --tls-cert-file="${PKI}/serving.crt" --tls-private-key-file="${PKI}/serving.key" \
    --kubelet-preferred-address-types=InternalIP --kubelet-use-node-status-port --kubelet-insecure-tls \
    --metric-resolution=10s --kubelet-request-timeout=5s
  wait_ready metrics-server 30 https_ok "https://127.0.0.1:${METRICS_SERVER_PORT}/livez"
  if ! api_get /apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io |
    grep -q "\"port\":${METRICS_SERVER_PORT}[,}]"; then
    metrics_apiservice_manifest | kubectl apply --server-side --force-conflicts --field-manager=openvpa-cluster-up -f - >/dev/null ||
      fail_with_log metrics-server "could not register the metrics.k8s.io APIService"
  fi
  wait_ready metrics-server 60 metrics_available
  step "metrics-server ready behind apiservice/v1beta1.metrics.k8s.io"

  node_up

  step "cluster ready: export KUBECONFIG=${ADMIN_KUBECONFIG}"
}

# Sourced (by e2e/cluster's tests of start and wait_ready), it only defines the functions.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
