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

# Fails when hack/flagsdocs/testdata/upstream-flags.tsv does not match the pinned upstream module.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/verify-generated.sh" update-upstream-flags.sh hack/flagsdocs/testdata/upstream-flags.tsv
