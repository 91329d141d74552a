#!/usr/bin/env bash
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
