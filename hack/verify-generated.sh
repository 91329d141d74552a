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
