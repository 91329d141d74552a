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

# Fails when docs/reference.md and the code disagree, both ways: every
# metric the components register (hack/metricnames), every event reason
# constant and every condition type must be in the reference, and every
# name the reference lists must still exist in the code.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
doc=docs/reference.md

# names_in_doc <section>: the backticked first column of the tables under
# "## <section>".
names_in_doc() {
  awk -v s="## $1" '/^## /{on=($0==s)} on && /^\| `/{split($0,c,"`"); print c[2]}' "$doc" | sort -u
}

# Event reasons: the Reason* constants of the packages that record events.
event_reasons() {
  grep -hoE '^\s*Reason[A-Za-z]+ +(Reason )?= +"[A-Za-z]+"' \
    updater/eviction/eviction.go updater/loop/loop.go updater/scalepoint/scalepoint.go pkg/recommendation/plan.go \
    recommender/policy/controller.go |
    sed -E 's/.*"([A-Za-z]+)"/\1/' | sort -u
}

condition_types() {
  grep -hoE 'VerticalPodAutoscalerConditionType = "[A-Za-z]+"' apis/autoscaling/v1/types.go |
    sed -E 's/.*"([A-Za-z]+)"/\1/' | sort -u
}

metrics=$(go run ./hack/metricnames | cut -f2 | sort -u)

status=0
check() {
  local what=$1 code=$2 doc_names=$3 missing gone
  missing=$(comm -23 <(echo "$code") <(echo "$doc_names"))
  gone=$(comm -13 <(echo "$code") <(echo "$doc_names"))
  if [[ -n "$missing" ]]; then
    echo "$what in the code but not in $doc:" >&2
    echo "$missing" | sed 's/^/  /' >&2
    status=1
  fi
  if [[ -n "$gone" ]]; then
    echo "$what in $doc but not in the code:" >&2
    echo "$gone" | sed 's/^/  /' >&2
    status=1
  fi
}
check metrics "$metrics" "$(names_in_doc Metrics)"
check "event reasons" "$(event_reasons)" "$(names_in_doc Events)"
check "condition types" "$(condition_types)" "$(names_in_doc Conditions)"
exit "$status"
