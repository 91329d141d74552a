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

# Copies deploy/crds and deploy/rbac into the Helm chart (files/crds, files/rbac), which templates
# them for the release's namespace, and the monitoring kit's alerts and dashboard
# (deploy/components/monitoring/rules.yaml, dashboard.json) into files/monitoring, which
# templates read as they are, and the RBAC of deploy/components/hpa-scale-point into
# files/hpa-scale-point (rendered with updater.hpaScalePoint); generates the chart's values.schema.json and README.md from the
# comments of its values.yaml (hack/tools/helm/chartdocs). hack/verify-chart.sh checks all of them.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHART=${ROOT}/deploy/charts/vertical-pod-autoscaler
for part in crds rbac; do
  rm -rf "${CHART}/files/${part}"
  mkdir -p "${CHART}/files/${part}"
  cp "${ROOT}/deploy/${part}/"*.yaml "${CHART}/files/${part}/"
done
rm -rf "${CHART}/files/hpa-scale-point"
mkdir -p "${CHART}/files/hpa-scale-point"
cp "${ROOT}/deploy/components/hpa-scale-point/rbac.yaml" "${CHART}/files/hpa-scale-point/rbac.yaml"
rm -rf "${CHART}/files/monitoring"
mkdir -p "${CHART}/files/monitoring"
for f in rules.yaml dashboard.json; do
  cp "${ROOT}/deploy/components/monitoring/${f}" "${CHART}/files/monitoring/${f}"
done
(cd "${ROOT}/hack/tools/helm" && GOWORK=off GOFLAGS=-mod=readonly go run ./chartdocs -chart "${CHART}")
