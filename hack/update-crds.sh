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

# Regenerates the CustomResourceDefinitions in deploy/crds/ from the markers in
# apis/ with controller-gen (version pinned in hack/tools/go.mod): v1, served and stored, and
# v1beta2, neither served nor stored, kept for clusters whose storedVersions still name it.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${CRD_OUTPUT_DIR:-$ROOT/deploy/crds}

mkdir -p "$OUT"
cd "$ROOT"
go -C hack/tools tool controller-gen crd:crdVersions=v1,allowDangerousTypes=true \
  paths="$ROOT/apis/autoscaling/v1/..." \
  paths="$ROOT/apis/autoscaling/v1beta2/..." \
  paths="$ROOT/apis/openvpa/v1alpha1/..." \
  output:crd:dir="$OUT"
