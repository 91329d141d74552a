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

# Checks the Helm chart deploy/charts/vertical-pod-autoscaler: its copies of deploy/crds,
# deploy/rbac and the monitoring kit's rules.yaml and dashboard.json, its values.schema.json and
# README.md are current (hack/update-chart.sh), `helm lint --strict` is clean with each way of
# getting the webhook's certificate and with the monitoring kit on, and
# hack/tools/helm/chartcheck passes: rendered as deploy/ is configured it installs the same
# ServiceAccounts, RBAC, Deployments, Service, disruption budgets and CRDs as deploy/, rendered
# into another namespace every namespaced object and namespace flag is there, upstream's values
# keys render as they mean upstream, and unknown keys are refused.
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
if ! cmp -s "${ROOT}/deploy/components/hpa-scale-point/rbac.yaml" "${CHART}/files/hpa-scale-point/rbac.yaml"; then
  echo "${CHART#"${ROOT}"/}/files/hpa-scale-point/rbac.yaml differs from deploy/components/hpa-scale-point/rbac.yaml; run hack/update-chart.sh" >&2
  failed=1
fi
for f in rules.yaml dashboard.json; do
  if ! cmp -s "${ROOT}/deploy/components/monitoring/${f}" "${CHART}/files/monitoring/${f}"; then
    echo "${CHART#"${ROOT}"/}/files/monitoring/${f} differs from deploy/components/monitoring/${f}; run hack/update-chart.sh" >&2
    failed=1
  fi
done
if [[ "$(ls "${CHART}/files/monitoring")" != "$(printf 'dashboard.json\nrules.yaml')" ]]; then
  echo "${CHART#"${ROOT}"/}/files/monitoring holds other files than rules.yaml and dashboard.json; run hack/update-chart.sh" >&2
  failed=1
fi
if ! (cd "${ROOT}/hack/tools/helm" && GOWORK=off GOFLAGS=-mod=readonly go run ./chartdocs -chart "${CHART}" -check); then
  failed=1
fi
"${ROOT}/hack/helm.sh" lint --strict "${CHART}"
"${ROOT}/hack/helm.sh" lint --strict "${CHART}" --namespace openvpa-system
"${ROOT}/hack/helm.sh" lint --strict "${CHART}" --set admissionController.certManager.enabled=true \
  --set admissionController.certManager.createSelfSignedIssuer.enabled=true
"${ROOT}/hack/helm.sh" lint --strict "${CHART}" --set admissionController.tls.existingSecret=vpa-tls-certs
"${ROOT}/hack/helm.sh" lint --strict "${CHART}" --set updater.hpaScalePoint=true
"${ROOT}/hack/helm.sh" lint --strict "${CHART}" --set admissionController.registerWebhook=true \
  --set admissionController.replicas=1
"${ROOT}/hack/helm.sh" lint --strict "${CHART}" --set metrics.service.enabled=true --set serviceMonitor.enabled=true \
  --set podMonitor.enabled=true --set prometheusRule.enabled=true --set grafanaDashboard.enabled=true
(cd "${ROOT}/hack/tools/helm" && GOWORK=off GOFLAGS=-mod=readonly go run ./chartcheck -repo "${ROOT}")
exit "${failed}"
