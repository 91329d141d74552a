#!/usr/bin/env bash
# make demo: builds OpenVPA, starts (or reuses) the local control plane, runs the
# three components as local processes, each impersonating its own
# ServiceAccount so the RBAC in deploy/rbac applies, creates the demo
# workloads with one VPA per update mode, waits until the recommendations are
# in and applied, and shows them. hack/demo/down.sh (make demo-down) stops it.
#
# Short intervals are passed as flags below; the components run their normal
# code paths.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEMO_DIR=${DEMO_DIR:-$ROOT/_output/demo}
TIMEOUT=${DEMO_TIMEOUT:-420}
export KUBECONFIG=$ROOT/_output/cluster/kubeconfig
kubectl() { "$ROOT/hack/cluster/kubectl.sh" "$@"; }

start=$(date +%s)
step() { printf '\n==> [%3ss] %s\n' "$(($(date +%s) - start))" "$*"; }

step "Building the components"
make -C "$ROOT" --no-print-directory build

step "Starting the local control plane (reused when it is running)"
"$ROOT/hack/cluster/up.sh"

step "Applying the CRDs and the components' RBAC from deploy/"
kubectl apply -f "$ROOT/deploy/crds/" >/dev/null
kubectl apply -f "$ROOT/deploy/rbac/" >/dev/null
kubectl wait --for condition=established --timeout=60s \
  crd/verticalpodautoscalers.autoscaling.k8s.io crd/verticalpodautoscalercheckpoints.autoscaling.k8s.io >/dev/null

mkdir -p "$DEMO_DIR/pids" "$DEMO_DIR/logs" "$DEMO_DIR/certs"

# impersonating_kubeconfig NAME writes a copy of the admin kubeconfig whose user
# acts as the ServiceAccount kube-system/NAME.
impersonating_kubeconfig() {
  local out=$DEMO_DIR/$1.kubeconfig user
  cp "$KUBECONFIG" "$out"
  user=$(kubectl --kubeconfig "$out" config view -o jsonpath='{.contexts[0].context.user}')
  kubectl --kubeconfig "$out" config set "users.$user.as" "system:serviceaccount:kube-system:$1" >/dev/null
  echo "$out"
}

# run NAME BINARY ARGS...: starts a component in the background unless it runs.
run() {
  local name=$1 bin=$2 pidfile=$DEMO_DIR/pids/$1.pid
  shift 2
  if [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    kill "$(cat "$pidfile")" 2>/dev/null || true
    while kill -0 "$(cat "$pidfile")" 2>/dev/null; do sleep 0.2; done
  fi
  nohup "$ROOT/bin/$bin" --kubeconfig "$(impersonating_kubeconfig "$name")" "$@" \
    >"$DEMO_DIR/logs/$name.log" 2>&1 &
  echo $! >"$pidfile"
  echo "    $name: pid $!, log _output/demo/logs/$name.log"
}

step "Starting the three components (scoped to the demo namespace)"
run vpa-admission-controller vpa-admission-controller \
  --vpa-object-namespace=demo --self-signed-cert-dir="$DEMO_DIR/certs" --reload-cert \
  --register-by-url --webhook-address=https://127.0.0.1 --webhook-port=18000 --port=18000 \
  --webhook-config-name=openvpa-demo --address=127.0.0.1:18944 --status-lease-update-interval=5s
run vpa-recommender vpa-recommender \
  --vpa-object-namespace=demo --recommender-interval=10s --checkpoints-write-interval=30s \
  --address=127.0.0.1:18942
run vpa-updater vpa-updater \
  --vpa-object-namespace=demo --updater-interval=10s --address=127.0.0.1:18943

for port in 18944 18942 18943; do
  for _ in $(seq 1 150); do
    curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
    sleep 0.2
  done
  curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null || {
    echo "a component on port $port did not become ready; see _output/demo/logs/" >&2
    tail -n 30 "$DEMO_DIR"/logs/*.log >&2
    exit 1
  }
done
echo "    all three report ready"

step "Creating the demo workloads and their VPAs (Off, Initial, Recreate, InPlaceOrRecreate)"
kubectl apply -f "$(dirname "${BASH_SOURCE[0]}")/workloads.yaml" >/dev/null
kubectl -n demo get deploy

# The usage driver changes the simulated usage: spiky CPU jumps between 100m
# and 900m, leaky memory grows by 20Mi per tick until it passes its limit.
if [[ -f $DEMO_DIR/pids/usage-driver.pid ]]; then kill "$(cat "$DEMO_DIR/pids/usage-driver.pid")" 2>/dev/null || true; fi
(
  tick=0
  while true; do
    tick=$((tick + 1))
    cpu=100m; ((tick % 2)) && cpu=900m
    for p in $(kubectl -n demo get pods -l app=spiky -o name 2>/dev/null); do
      kubectl -n demo annotate --overwrite "$p" "kwok.x-k8s.io/usage-cpu=$cpu" >/dev/null 2>&1 || true
    done
    for p in $(kubectl -n demo get pods -l app=leaky -o name 2>/dev/null); do
      cur=$(kubectl -n demo get "$p" -o jsonpath='{.metadata.annotations.kwok\.x-k8s\.io/usage-memory}' 2>/dev/null || true)
      mi=${cur%Mi}; [[ $mi =~ ^[0-9]+$ ]] || mi=200
      ((mi < 400)) && mi=$((mi + 20))
      kubectl -n demo annotate --overwrite "$p" "kwok.x-k8s.io/usage-memory=${mi}Mi" >/dev/null 2>&1 || true
    done
    sleep 10
  done
) >"$DEMO_DIR/logs/usage-driver.log" 2>&1 &
echo $! >"$DEMO_DIR/pids/usage-driver.pid"

provided() {
  kubectl -n demo get vpa -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="RecommendationProvided")].status}{"\n"}{end}' | grep -c '^True$' || true
}
patched_pods() { # pods of app $1 created with a recommendation from the admission controller
  kubectl -n demo get pods -l "app=$1" -o jsonpath='{range .items[*]}{.metadata.annotations.vpaUpdates}{"\n"}{end}' | grep -c . || true
}
sampled() { # VPAs whose CPU target is above the pod minimum, i.e. built from real samples
  kubectl -n demo get vpa -o jsonpath='{range .items[*]}{.status.recommendation.containerRecommendations[0].target.cpu}{"\n"}{end}' |
    grep -vc -e '^$' -e '^25m$' -e '^12m$' || true
}
resized() { # pods of app $1 whose running container has more than its original 20m CPU
  kubectl -n demo get pods -l "app=$1" -o jsonpath='{range .items[*]}{.status.containerStatuses[0].resources.requests.cpu}{"\n"}{end}' | grep -vc '^20m$' || true
}

step "Waiting for recommendations (metrics-server needs two scrapes, then one recommender loop)"
restarted=0
while :; do
  now=$(($(date +%s) - start))
  p=$(provided)
  initial=$(patched_pods spiky)
  rolled=$(patched_pods leaky)
  inplace=$(resized resizable)
  printf '    [%3ss] VPAs with a recommendation: %s/4 · Initial pods patched: %s/2 · Recreate pods rolled: %s/2 · pods resized in place: %s/2\n' \
    "$now" "$p" "$initial" "$rolled" "$inplace"
  if ((p == 4 && restarted == 0 && $(sampled) == 4)); then
    echo "    all four recommendations rest on usage samples: restarting the Initial-mode Deployment so its new pods get them"
    kubectl -n demo rollout restart deploy/spiky >/dev/null
    restarted=1
  fi
  if ((p == 4 && initial >= 2 && rolled >= 2)); then
    break
  fi
  if ((now > TIMEOUT)); then
    echo "The demo did not converge within ${TIMEOUT}s; the components' logs are in _output/demo/logs/." >&2
    kubectl -n demo get vpa,pods >&2 || true
    exit 1
  fi
  sleep 5
done

step "kubectl get vpa -n demo"
kubectl -n demo get vpa
step "kubectl describe vpa steady -n demo"
kubectl -n demo describe vpa steady

cat <<MSG

OpenVPA is running against the local control plane (${KUBECONFIG}).
Look further:
  export KUBECONFIG=$KUBECONFIG
  hack/cluster/kubectl.sh -n demo get vpa,pods -o wide
  hack/cluster/kubectl.sh -n demo describe vpa leaky         # OOM-driven memory, evicted by the updater
  hack/cluster/kubectl.sh -n demo get events --field-selector reason=EvictedByVPA
  hack/cluster/kubectl.sh -n demo get pod -l app=spiky -o yaml | grep -A3 annotations
  curl -s 127.0.0.1:18942/metrics | grep ^vpa_recommender   # also :18943 updater, :18944 admission
  tail -f _output/demo/logs/vpa-recommender.log
Stop everything it started: make demo-down
MSG
