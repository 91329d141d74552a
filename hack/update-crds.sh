#!/usr/bin/env bash
# Regenerates the CustomResourceDefinitions in deploy/crds/ from the markers in
# apis/ with controller-gen (version pinned in hack/tools/go.mod).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${CRD_OUTPUT_DIR:-$ROOT/deploy/crds}

mkdir -p "$OUT"
cd "$ROOT"
go -C hack/tools tool controller-gen crd:crdVersions=v1,allowDangerousTypes=true \
  paths="$ROOT/apis/autoscaling/v1/..." \
  output:crd:dir="$OUT"
