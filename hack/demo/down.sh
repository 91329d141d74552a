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

# make demo-down: stops what make demo started, by PID (the components, the
# usage driver and the local control plane), removes the demo's webhook
# configuration, and checks that nothing is left listening. A PID file whose
# process is no longer what the demo started is only removed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEMO_DIR=${DEMO_DIR:-$ROOT/_output/demo}
export CLUSTER_DIR=${CLUSTER_DIR:-$ROOT/_output/cluster}
export KUBECONFIG=$CLUSTER_DIR/kubeconfig
# shellcheck source-path=SCRIPTDIR source=../cluster/proc.sh
source "$ROOT/hack/cluster/proc.sh"

if [[ -f $KUBECONFIG ]]; then
  "$ROOT/hack/cluster/kubectl.sh" delete mutatingwebhookconfiguration openvpa-demo --ignore-not-found --request-timeout=5s >/dev/null 2>&1 || true
fi

# ours NAME PID: a component runs its binary (named like its PID file) with an
# argument under DEMO_DIR; the usage driver is a subshell of hack/demo/up.sh.
ours() {
  local args=()
  if [[ $1 != usage-driver ]]; then
    proc_is "$2" "$1" "$DEMO_DIR"
    return
  fi
  proc_alive "$2" || return 1
  { mapfile -d '' -t args <"/proc/$2/cmdline"; } 2>/dev/null || return 1
  [[ " ${args[*]} " == *"hack/demo/up.sh "* ]]
}

for pidfile in "$DEMO_DIR"/pids/*.pid; do
  [[ -f $pidfile ]] || continue
  name=$(basename "$pidfile" .pid)
  pid=$(<"$pidfile")
  if ours "$name" "$pid"; then
    echo "stopping $name (pid $pid)"
    pkill -TERM -P "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      ours "$name" "$pid" || break
      sleep 0.2
    done
    if ours "$name" "$pid"; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pidfile"
done

"$ROOT/hack/cluster/down.sh"

busy=$(ss -Hltn '( sport = :18000 or sport = :18942 or sport = :18943 or sport = :18944 )' 2>/dev/null || true)
if [[ -n $busy ]]; then
  echo "still listening: $busy" >&2
  exit 1
fi
echo "demo stopped; nothing is listening"
