#!/usr/bin/env bash
# Checks that every Go module of the repository (or the modules in the
# folders given) is tidy: go.mod and go.sum are what `go mod tidy` makes them,
# with no unused or wrongly marked requirements. Fix with `go mod tidy` in the
# module's folder.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ $# -eq 0 ]]; then
  mapfile -t dirs < <(cd "${REPO_ROOT}" && git ls-files -- '*go.mod' ':!:**/testdata/**' | xargs -n1 dirname)
  dirs=("${dirs[@]/#/${REPO_ROOT}/}")
else
  dirs=("$@")
fi
failed=0
for dir in "${dirs[@]}"; do
  if ! diff=$(cd "${dir}" && GOWORK=off GOFLAGS=-mod=mod go mod tidy -diff 2>&1); then
    echo "${dir#"${REPO_ROOT}"/}: go.mod or go.sum is not tidy; run go mod tidy there:" >&2
    echo "${diff}" >&2
    failed=1
  fi
done
exit "${failed}"
