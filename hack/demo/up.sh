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

# make demo: builds OpenVPA, starts (or reuses) the local control plane, runs the
# three components as local processes, each impersonating its own
# ServiceAccount so the RBAC in deploy/rbac applies, creates the demo
# workloads with one VPA per update mode, waits until the recommendations are
# in and applied, and shows them. hack/demo/down.sh (make demo-down) stops it.
#
# Short intervals are passed as flags below; the components run their normal
# code paths. Every step fails the demo, saying why, if it fails. CLUSTER_DIR
# (and the ports, see hack/cluster/lib.sh) select another local cluster.
set -euo pipefail
# Command substitutions fail the script too, so a failing helper is never
# taken for an empty answer.
shopt -s inherit_errexit

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEMO_DIR=${DEMO_DIR:-$ROOT/_output/demo}
TIMEOUT=${DEMO_TIMEOUT:-420}
export CLUSTER_DIR=${CLUSTER_DIR:-$ROOT/_output/cluster}
export KUBECONFIG=$CLUSTER_DIR/kubeconfig
kubectl() { "$ROOT/hack/cluster/kubectl.sh" "$@"; }
# shellcheck source-path=SCRIPTDIR source=../cluster/proc.sh
source "$ROOT/hack/cluster/proc.sh"

start=$(date +%s)
step() { printf '\n==> [%3ss] %s\n' "$(($(date +%s) - start))" "$*"; }
die() {
  printf 'ERROR: %s\n' "$*" >&2
  exit 1
}

step "Building the components"
make -C "$ROOT" --no-print-directory build

# The demo runs its workloads on KWOK nodes, whose usage the driver below sets, so it needs
# neither the real node nor its images: REAL_NODE=false skips building containerd and the
# kubelet, a third of a cold build. A running cluster is reused as it is, real node or not;
# make test later adds the real node to it.
step "Starting the local control plane (reused when it is running)"
REAL_NODE=${REAL_NODE:-false} "$ROOT/hack/cluster/up.sh"

step "Applying the CRDs and the components' RBAC from deploy/"
kubectl apply -f "$ROOT/deploy/crds/" >/dev/null
kubectl apply -f "$ROOT/deploy/rbac/" >/dev/null
kubectl wait --for condition=established --timeout=60s \
  crd/verticalpodautoscalers.autoscaling.k8s.io crd/verticalpodautoscalercheckpoints.autoscaling.k8s.io >/dev/null

mkdir -p "$DEMO_DIR/pids" "$DEMO_DIR/logs" "$DEMO_DIR/certs"

# impersonating_kubeconfig NAME writes $DEMO_DIR/NAME.kubeconfig: the admin
# credentials with `as: system:serviceaccount:kube-system:NAME`, so the API
# server authorises every request as that ServiceAccount and only its RBAC
# from deploy/rbac applies (as e2e/framework's ImpersonatingKubeconfig does).
# Then it checks that the API server sees that user. The file is written
# directly: `kubectl config set users.X.as` cannot set the field (kubectl
# names it act-as), and failed with "can't set a map to a value".
impersonating_kubeconfig() {
  local name=$1 out=$DEMO_DIR/$1.kubeconfig sa=system:serviceaccount:kube-system:$1 admin=() who
  mapfile -t admin < <(kubectl config view --raw --minify --output 'jsonpath={.clusters[0].cluster.server}{"\n"}{.clusters[0].cluster.certificate-authority-data}{"\n"}{.users[0].user.client-certificate-data}{"\n"}{.users[0].user.client-key-data}{"\n"}')
  if [[ ${#admin[@]} -ne 4 || -z ${admin[0]} || -z ${admin[1]} || -z ${admin[2]} || -z ${admin[3]} ]]; then
    die "$KUBECONFIG: no server, CA and client certificate embedded; cannot derive $out"
  fi
  (
    umask 077
    cat >"$out.tmp" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: openvpa-local
  cluster:
    server: ${admin[0]}
    certificate-authority-data: ${admin[1]}
users:
- name: $sa
  user:
    client-certificate-data: ${admin[2]}
    client-key-data: ${admin[3]}
    as: $sa
contexts:
- name: $name
  context:
    cluster: openvpa-local
    user: $sa
current-context: $name
KUBECONFIG
  )
  mv -f "$out.tmp" "$out"
  who=$(kubectl --kubeconfig "$out" auth whoami --output 'jsonpath={.status.userInfo.username}')
  [[ $who == "$sa" ]] || die "$out authenticates as '$who', want $sa"
  echo "    $name acts as $who (kubectl auth whoami --kubeconfig $out)"
}

# stop_component NAME BINARY: stops the component a previous run started, if
# its PID file still names it (the binary, run with this demo's kubeconfig).
stop_component() {
  local pidfile=$DEMO_DIR/pids/$1.pid pid deadline
  [[ -f $pidfile ]] || return 0
  pid=$(<"$pidfile")
  if proc_is "$pid" "$2" "$DEMO_DIR"; then
    kill -TERM "$pid" 2>/dev/null || true
    deadline=$((SECONDS + 10))
    while proc_is "$pid" "$2" "$DEMO_DIR"; do
      if ((SECONDS >= deadline)); then
        kill -KILL "$pid" 2>/dev/null || true
      fi
      sleep 0.2
    done
  fi
  rm -f "$pidfile"
}

# run NAME BINARY ARGS...: (re)starts a component in the background, acting as
# the ServiceAccount kube-system/NAME.
run() {
  local name=$1 bin=$2 kubeconfig=$DEMO_DIR/$1.kubeconfig
  shift 2
  stop_component "$name" "$bin"
  impersonating_kubeconfig "$name"
  nohup "$ROOT/bin/$bin" --kubeconfig "$kubeconfig" "$@" \
    >"$DEMO_DIR/logs/$name.log" 2>&1 &
  echo $! >"$DEMO_DIR/pids/$name.pid"
  echo "    $name: pid $!, log $DEMO_DIR/logs/$name.log"
}

# wait_ready NAME BINARY PORT: waits until the component's /readyz answers;
# fails with its log if it exits or is not ready within 60 s.
wait_ready() {
  local name=$1 bin=$2 port=$3 deadline=$((SECONDS + 60)) pid
  pid=$(<"$DEMO_DIR/pids/$name.pid")
  until curl -fsS --max-time 2 "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; do
    if ! proc_alive "$pid" || ((SECONDS >= deadline)); then
      printf '%s\n' "----- last 30 lines of $DEMO_DIR/logs/$name.log -----" >&2
      tail -n 30 "$DEMO_DIR/logs/$name.log" >&2
      if proc_alive "$pid"; then die "$name not ready on port $port after 60s"; fi
      die "$name exited during start-up"
    fi
    sleep 0.2
  done
}

step "Starting the three components (scoped to the demo namespace)"
run vpa-admission-controller vpa-admission-controller \
  --vpa-object-namespace=demo --self-signed-cert-dir="$DEMO_DIR/certs" --reload-cert \
  --register-by-url --webhook-address=https://127.0.0.1 --webhook-port=18000 --port=18000 \
  --webhook-config-name=openvpa-demo --address=127.0.0.1:18944 --status-lease-update-interval=5s
# --round-memory-bytes=1048576: memory in whole Mi (284Mi rather than 297164212 bytes).
run vpa-recommender vpa-recommender \
  --vpa-object-namespace=demo --recommender-interval=10s --checkpoints-write-interval=30s \
  --round-memory-bytes=1048576 --address=127.0.0.1:18942
run vpa-updater vpa-updater \
  --vpa-object-namespace=demo --updater-interval=10s --address=127.0.0.1:18943

wait_ready vpa-admission-controller vpa-admission-controller 18944
wait_ready vpa-recommender vpa-recommender 18942
wait_ready vpa-updater vpa-updater 18943
echo "    all three report ready"

step "Creating the demo workloads and their VPAs (Off, Initial, Recreate, InPlaceOrRecreate)"
kubectl apply -f "$(dirname "${BASH_SOURCE[0]}")/workloads.yaml" >/dev/null
kubectl -n demo get deploy

# The usage driver changes the simulated usage: spiky CPU jumps between 100m
# and 900m, leaky memory grows by 20Mi per tick until it passes its limit.
# A previous run's driver is a subshell of this script; stop it if its PID file
# still names one.
if [[ -f $DEMO_DIR/pids/usage-driver.pid ]]; then
  old=$(<"$DEMO_DIR/pids/usage-driver.pid")
  if proc_alive "$old" && { tr '\0' ' ' <"/proc/$old/cmdline"; } 2>/dev/null | grep -qF 'hack/demo/up.sh '; then
    pkill -TERM -P "$old" 2>/dev/null || true
    kill -TERM "$old" 2>/dev/null || true
  fi
fi
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

# The counters below fail the demo if kubectl fails; only grep's "no match"
# (a count of 0) is not an error.
provided() {
  local out
  out=$(kubectl -n demo get vpa -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="RecommendationProvided")].status}{"\n"}{end}')
  grep -c '^True$' <<<"$out" || true
}
patched_pods() { # pods of app $1 created with a recommendation from the admission controller
  local out
  out=$(kubectl -n demo get pods -l "app=$1" -o jsonpath='{range .items[*]}{.metadata.annotations.vpaUpdates}{"\n"}{end}')
  grep -c . <<<"$out" || true
}
sampled() { # VPAs whose CPU target is above the pod minimum, i.e. built from real samples
  local out
  out=$(kubectl -n demo get vpa -o jsonpath='{range .items[*]}{.status.recommendation.containerRecommendations[0].target.cpu}{"\n"}{end}')
  grep -vc -e '^$' -e '^25m$' -e '^12m$' <<<"$out" || true
}
resized() { # pods of app $1 whose running container has more than its original 20m CPU
  local out
  out=$(kubectl -n demo get pods -l "app=$1" -o jsonpath='{range .items[*]}{.status.containerStatuses[0].resources.requests.cpu}{"\n"}{end}')
  grep -vc -e '^$' -e '^20m$' <<<"$out" || true
}

step "Waiting for recommendations (metrics-server needs two scrapes, then one recommender loop)"
restarted=0
# The deadline counts from here: on a fresh machine the builds before this took ten minutes.
waiting=$(date +%s)
while :; do
  now=$(($(date +%s) - start))
  p=$(provided)
  initial=$(patched_pods spiky)
  rolled=$(patched_pods leaky)
  inplace=$(resized resizable)
  samples=$(sampled)
  printf '    [%3ss] VPAs with a recommendation: %s/4 · Initial pods patched: %s/2 · Recreate pods rolled: %s/2 · pods resized in place: %s/2\n' \
    "$now" "$p" "$initial" "$rolled" "$inplace"
  if ((p == 4 && restarted == 0 && samples == 4)); then
    echo "    all four recommendations rest on usage samples: restarting the Initial-mode Deployment so its new pods get them"
    kubectl -n demo rollout restart deploy/spiky >/dev/null
    restarted=1
  fi
  if ((p == 4 && initial >= 2 && rolled >= 2)); then
    break
  fi
  if (($(date +%s) - waiting > TIMEOUT)); then
    echo "The demo did not converge within ${TIMEOUT}s of waiting; the components' logs are in _output/demo/logs/." >&2
    kubectl -n demo get vpa,pods >&2 || true
    exit 1
  fi
  sleep 5
done

# A component acting as its ServiceAccount logs the API server's refusals; the
# demo is only a success if deploy/rbac let every component do its work.
step "Checking that deploy/rbac allowed the components everything they asked"
if grep -i 'forbidden' "$DEMO_DIR"/logs/vpa-*.log >&2; then
  die "a component was refused by RBAC (above); deploy/rbac lacks a permission"
fi
echo "    no request refused"

step "kubectl get vpa -n demo"
kubectl -n demo get vpa
step "kubectl describe vpa steady -n demo"
kubectl -n demo describe vpa steady

cat <<MSG

The upper bounds above are huge on purpose: the recommender widens each bound by how little
history it has (upper × (1 + 1/days of history)), so after a few minutes they are far apart;
they narrow over the first day, and LowConfidence=True says so meanwhile (docs/algorithm.md).

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
