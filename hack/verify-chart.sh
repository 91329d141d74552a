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

# Checks the Helm chart deploy/charts/vertical-pod-autoscaler: its copies of deploy/crds and
# deploy/rbac are current (hack/update-chart.sh), `helm lint --strict` is clean, and rendered as
# deploy/ is configured it installs the same ServiceAccounts, RBAC, Deployments, Service,
# disruption budgets and CRDs as deploy/ (hack/tools/helm/chartcheck).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHART=${ROOT}/deploy/charts/vertical-pod-autoscaler
failed=0
for part in crds rbac; do
  if ! diff -r "${ROOT}/deploy/${part}" "${CHART}/files/${part}" -x '*.go' -x Kustomization >/dev/null; then
    echo "${CHART#"${ROOT}"/}/files/${part} differs from deploy/${part}; run hack/update-chart.sh" >&2
    failed=1
  fi
done
"${ROOT}/hack/helm.sh" lint --strict "${CHART}"
"${ROOT}/hack/helm.sh" lint --strict "${CHART}" --set admissionController.certificates.mode=cert-manager
(cd "${ROOT}/hack/tools/helm" && GOWORK=off GOFLAGS=-mod=readonly go run ./chartcheck -repo "${ROOT}")
exit "${failed}"
