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

# Regenerates deploy/components/monitoring/prometheusrule.yaml, the
# Prometheus Operator's PrometheusRule, from the plain rules file beside it
# (rules.yaml, which promtool checks and tests).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${ROOT}/deploy/components/monitoring
{
  cat <<'HEADER'
# Generated from rules.yaml by hack/update-monitoring.sh; do not edit.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: openvpa
  namespace: kube-system
  labels:
    app.kubernetes.io/name: openvpa
    app.kubernetes.io/component: monitoring
spec:
HEADER
  # rules.yaml without its leading comment, indented under spec.
  sed -e '/^#/d' -e 's/^\(.\)/  \1/' "${dir}/rules.yaml"
} >"${dir}/prometheusrule.yaml.tmp"
mv "${dir}/prometheusrule.yaml.tmp" "${dir}/prometheusrule.yaml"
