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

# Stops the local control plane started by up.sh: only the processes named in its PID files, and
# only if they still are the processes it started for this CLUSTER_DIR. Stops them in reverse
# start order with SIGTERM, then SIGKILL after 10 s, and checks that none of the cluster's ports
# is still listening. Takes turns with up.sh on the cluster's lock, so it never stops a cluster
# that is half started; running it again, or on a stopped cluster, does nothing.
#
#   hack/cluster/down.sh           # stop, keep state (the next up.sh restarts in seconds)
#   hack/cluster/down.sh --wipe    # stop and delete CLUSTER_DIR (certificates, etcd data, logs)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=proc.sh
source "${CLUSTER_HACK_DIR}/proc.sh"
# shellcheck source-path=SCRIPTDIR source=node.sh
source "${CLUSTER_HACK_DIR}/node.sh"

PIDS=${CLUSTER_DIR}/pids

# Ports come from the running cluster's record when there is one.
if [[ -f "${CLUSTER_DIR}/cluster.env" ]]; then
  # shellcheck source=/dev/null
  source <(grep -E '^[A-Z_]+_PORT=[0-9]+$' "${CLUSTER_DIR}/cluster.env")
fi

# stop <component>: stops the process in the component's PID file if it is the component's own
# process for this CLUSTER_DIR (see proc.sh), and removes the PID file.
stop() {
  local name=$1 pidfile=${PIDS}/$1.pid pid deadline
  [[ -f "${pidfile}" ]] || return 0
  pid=$(<"${pidfile}")
  if proc_is "${pid}" "${name}" "${CLUSTER_DIR}"; then
    kill -TERM "${pid}" 2>/dev/null || true
    deadline=$((SECONDS + 10))
    while proc_is "${pid}" "${name}" "${CLUSTER_DIR}" && ((SECONDS < deadline)); do
      sleep 0.1
    done
    if proc_is "${pid}" "${name}" "${CLUSTER_DIR}"; then
      log "${name} (pid ${pid}) ignored SIGTERM; sending SIGKILL"
      kill -KILL "${pid}" 2>/dev/null || true
      while proc_is "${pid}" "${name}" "${CLUSTER_DIR}"; do sleep 0.1; done
    fi
    log "stopped ${name} (pid ${pid})"
  fi
  rm -f "${pidfile}"
}

main() {
  local i port listening=()
  if [[ -d "${CLUSTER_DIR}" ]]; then
    lock_cluster "${CLUSTER_DIR}" 600 ||
      die "another cluster-up or cluster-down has held ${CLUSTER_DIR}/cluster-up.lock for 10 minutes"
  fi
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
    stop "${COMPONENTS[i]}"
  done
  node_down
  for port in "${ETCD_PORT}" "${ETCD_PEER_PORT}" "${APISERVER_PORT}" "${KCM_PORT}" "${SCHEDULER_PORT}" \
    "${KWOK_PORT}" "${METRICS_SERVER_PORT}"; do
    if [[ -n "$(ss -Htln "sport = :${port}")" ]]; then
      listening+=("${port}")
    fi
  done
  if [[ "${1:-}" == "--wipe" ]]; then
    rm -rf "${CLUSTER_DIR}"
    log "deleted ${CLUSTER_DIR}"
  fi
  if [[ ${#listening[@]} -gt 0 ]]; then
    die "still listening after stop: ports ${listening[*]} (not started by this cluster, or not ours to stop)"
  fi
  log "cluster in ${CLUSTER_DIR} is down"
}

main "$@"
