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

# Fails when a hand-written source file lacks the Apache-2.0 licence header (see
# hack/update-boilerplate.sh, which adds it).
set -euo pipefail
if ! missing=$("$(dirname "${BASH_SOURCE[0]}")/update-boilerplate.sh" --list); then
  echo "these files lack the licence header; run hack/update-boilerplate.sh (make update):" >&2
  echo "${missing}" >&2
  exit 1
fi
