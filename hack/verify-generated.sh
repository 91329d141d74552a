#!/usr/bin/env bash
# Shared body of the verify-* scripts: runs an update-* script in a scratch
# copy of the tree and fails when its output differs from what is committed.
# Usage: hack/verify-generated.sh <update script> <path> [<path>...]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
script=$1
shift

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
tar -C "$ROOT" --exclude=./_output --exclude=./bin --exclude=./.git -cf - . | tar -C "$scratch" -xf -
(cd "$scratch" && "$scratch/hack/$script" >/dev/null)

status=0
for path in "$@"; do
  if ! diff -Nru "$ROOT/$path" "$scratch/$path"; then
    status=1
  fi
done
if [ "$status" -ne 0 ]; then
  echo "$* out of date: run 'make update' (hack/$script) and commit the result." >&2
fi
exit "$status"
