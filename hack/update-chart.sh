#!/usr/bin/env bash
# Copies deploy/crds and deploy/rbac into the Helm chart (files/crds, files/rbac), which templates
# them for the release's namespace. hack/verify-chart.sh checks the copies.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CHART=${ROOT}/deploy/charts/vertical-pod-autoscaler
for part in crds rbac; do
  rm -rf "${CHART}/files/${part}"
  mkdir -p "${CHART}/files/${part}"
  cp "${ROOT}/deploy/${part}/"*.yaml "${CHART}/files/${part}/"
done
