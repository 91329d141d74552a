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

# Regenerates deepcopy functions and the clientset, listers and informers of
# apis/ with k8s.io/code-generator's kube_codegen.sh (no apply configurations:
# nothing applies VPAs, and they would link client-go's discovery and every API
# group into each binary).
# The code-generator version is pinned in hack/tools/go.mod.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODULE=github.com/openvpa/openvpa
OUTPUT_ROOT=${OUTPUT_ROOT:-$ROOT}
cd "$ROOT"

CODEGEN_PKG=$(cd "$ROOT/hack/tools" && go mod download -json k8s.io/code-generator | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
# shellcheck source=/dev/null
source "$CODEGEN_PKG/kube_codegen.sh"

kube::codegen::gen_helpers \
  --boilerplate "$ROOT/hack/boilerplate.go.txt" \
  "$ROOT/apis"

kube::codegen::gen_client \
  --with-watch \
  --output-dir "$OUTPUT_ROOT/apis/generated" \
  --output-pkg "$MODULE/apis/generated" \
  --boilerplate "$ROOT/hack/boilerplate.go.txt" \
  "$ROOT/apis"
