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

# Runs every test of the main module (unit, integration and e2e), of hack/tools/images, of
# hack/tools/helm and of hack/tools/upstream-vpa (OpenVPA's recommender against upstream's code).
# The e2e packages need the local control plane, so it is brought up first (built on a fresh
# machine, reused when running); if it cannot start, the run fails here and says why instead of
# letting e2e tests skip.
#
#   hack/test.sh                 (or: make test)
#   hack/test.sh -run TestOOM    extra arguments go to go test
#   TEST_TIMEOUT=90m hack/test.sh
#   FUZZ_TIME=1m hack/test.sh      each fuzz target runs this long at the end (default 50000x:
#                                  fifty thousand inputs, a few seconds each)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${REPO_ROOT}"

# The image builder, pause and memhog are a module of their own (hack/tools/images); their tests
# need no cluster.
echo "==> go test in hack/tools/images (image tarballs, pause, memhog)"
go -C hack/tools/images test -count=1 ./...
echo "==> go test in hack/tools/helm (the chart against deploy/)"
GOWORK=off go -C hack/tools/helm test -count=1 ./...
echo "==> go test in hack/tools/upstream-vpa (recommendations and checkpoints against upstream's code)"
GOWORK=off go -C hack/tools/upstream-vpa test -count=1 ./...

echo "==> local control plane (hack/cluster/up.sh)"
if ! hack/cluster/up.sh; then
  echo "FAIL: the local control plane did not start (see the messages above); e2e tests cannot run" >&2
  exit 1
fi

echo "==> go test ./... but e2e/realnode, e2e/faults and e2e/release (e2e packages share the cluster above, one namespace per test)"
# -count=1: never replay cached results. The e2e tests' outcome depends on the cluster, which Go's
# test cache cannot see, so a cached pass proves nothing about this run.
mapfile -t packages < <(go list ./... | grep -v -e '/e2e/realnode$' -e '/e2e/faults$' -e '/e2e/release$')
go test -count=1 -timeout="${TEST_TIMEOUT:-60m}" "$@" "${packages[@]}"

# deploy/ as shipped and a released chart act on every namespace, so their tests on the real node
# run alone, one package after the other.
echo "==> go test ./e2e/realnode ./e2e/faults ./e2e/release (deploy/, its faults and a release on the real node, alone)"
go test -count=1 -p 1 -timeout="${TEST_TIMEOUT:-60m}" "$@" ./e2e/realnode/ ./e2e/faults/ ./e2e/release/

# The fuzz targets, each for a fixed number of inputs on top of its seed corpus (which the go test above
# already ran). A failing input is written under the package's testdata/fuzz/<target>/; keep it
# there as a seed once fixed. A run given go test arguments (a focused run) does not fuzz.
if [[ $# -gt 0 ]]; then
  exit 0
fi
# A count, not a duration: with a duration, Go 1.26's fuzz coordinator can fail a target with
# "context deadline exceeded" when the deadline passes while a starved worker is still running an
# input (go.dev/issue/75804, fixed in Go 1.27); a count has no deadline, so a loaded machine only
# makes the run slower.
echo "==> fuzz targets, ${FUZZ_TIME:-50000x} each"
for target in \
  ./admission-controller/pod:FuzzDecoder \
  ./admission-controller/pod:FuzzHandlerAgreement \
  ./admission-controller/webhook:FuzzServeHTTP \
  ./recommender/input:FuzzDecodePodMetricsList \
  ./recommender/model:FuzzRestoreCheckpoint \
  ./recommender/model:FuzzHistogramOps; do
  go test -run='^$' -fuzz="^${target#*:}\$" -fuzztime="${FUZZ_TIME:-50000x}" "${target%%:*}"
done
