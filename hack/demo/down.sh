#!/usr/bin/env bash
# make demo-down: stops what make demo started, by PID (the components, the
# usage driver and the local control plane), removes the demo's webhook
# configuration, and checks that nothing is left listening.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEMO_DIR=${DEMO_DIR:-$ROOT/_output/demo}
export KUBECONFIG=$ROOT/_output/cluster/kubeconfig

if [[ -f $KUBECONFIG ]]; then
  "$ROOT/hack/cluster/kubectl.sh" delete mutatingwebhookconfiguration openvpa-demo --ignore-not-found --request-timeout=5s >/dev/null 2>&1 || true
fi

for pidfile in "$DEMO_DIR"/pids/*.pid; do
  [[ -f $pidfile ]] || continue
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    echo "stopping $(basename "$pidfile" .pid) (pid $pid)"
    pkill -TERM -P "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
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
