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

# Adds the Apache-2.0 licence header (hack/boilerplate.*.txt) to every hand-written source file
# that lacks it: Go files, shell scripts and Makefiles. A Go file's //go:build lines
# stay first; a script's #! line stays first.
#
#   hack/update-boilerplate.sh           add the missing headers
#   hack/update-boilerplate.sh --list    only print the files that lack one (verify-boilerplate.sh)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"

list_only=false
[[ "${1:-}" == "--list" ]] && list_only=true

# sources prints the files that must carry the header: tracked or new, never ignored ones.
sources() {
  git ls-files --cached --others --exclude-standard -- \
    '*.go' '*.sh' '.ci/run' 'Makefile' '*/Makefile'
}

# has_header: the header's first lines within the file's first 20.
has_header() {
  head -n 20 "$1" | grep -q 'Copyright The OpenVPA Authors.' &&
    head -n 30 "$1" | grep -q 'Licensed under the Apache License, Version 2.0'
}

add_header() {
  local file=$1 tmp
  tmp=$(mktemp)
  case "${file}" in
  *.go)
    # Build constraints first, then the header, then the rest.
    awk -v hdr="hack/boilerplate.go.txt" '
      NR == 1 && /^\/\/go:build/ { print; getline; while (/^\/\/ ?\+build/) { print; getline } print ""; skip = ($0 == "") }
      !done { while ((getline line < hdr) > 0) print line; done = 1; if (skip) next }
      { print }' "${file}" >"${tmp}"
    ;;
  *)
    awk -v hdr="hack/boilerplate.sh.txt" '
      NR == 1 && /^#!/ { print; next }
      !done { while ((getline line < hdr) > 0) print line; if ($0 != "") print ""; done = 1 }
      { print }' "${file}" >"${tmp}"
    ;;
  esac
  cat "${tmp}" >"${file}" # keeps the file's mode
  rm -f "${tmp}"
}

missing=0
while IFS= read -r file; do
  [[ -f "${file}" ]] || continue
  has_header "${file}" && continue
  missing=$((missing + 1))
  if ${list_only}; then
    echo "${file}"
  else
    add_header "${file}"
  fi
done < <(sources)
if ${list_only} && ((missing > 0)); then
  exit 1
fi
exit 0
