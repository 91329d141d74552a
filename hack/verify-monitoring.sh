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

# Checks the monitoring kit (deploy/components/monitoring) offline:
#  - rules.yaml passes promtool check rules, and promtool test rules with
#    rules_test.yaml, which makes every alert fire and not fire;
#  - prometheusrule.yaml is rules.yaml as hack/update-monitoring.sh wraps it;
#  - every dashboard query parses as PromQL (promtool checks them as the
#    expressions of recording rules, with the dashboard variables filled in);
#  - every metric of ours the alerts, the dashboard and the kube-state-metrics
#    configuration name is one the components register (hack/metricnames).
# promtool comes from Debian's prometheus package, as for the e2e tests
# (hack/cluster/up.sh installs it); this script installs it when missing.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
dir=deploy/components/monitoring

if ! command -v promtool >/dev/null; then
  echo "promtool missing: installing Debian's prometheus package" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >/dev/null ||
    { DEBIAN_FRONTEND=noninteractive apt-get update >/dev/null &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >/dev/null; }
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

promtool check rules "$dir/rules.yaml" >/dev/null
(cd "$dir" && promtool test rules rules_test.yaml)

"$ROOT/hack/verify-generated.sh" update-monitoring.sh "$dir/prometheusrule.yaml"

# The dashboard's queries as recording rules.
python3 - "$dir/dashboard.json" >"$scratch/dashboard-rules.yaml" <<'PY'
import json, sys
dash = json.load(open(sys.argv[1]))
exprs = []
def walk(panels):
    for p in panels:
        exprs.extend(t["expr"] for t in p.get("targets", []) if t.get("expr"))
        walk(p.get("panels", []))
walk(dash["panels"])
for v in dash.get("templating", {}).get("list", []):
    q = v.get("query")
    if isinstance(q, dict) and q.get("query", "").startswith("label_values("):
        # label_values(<selector>, label): the selector is PromQL.
        exprs.append(q["query"][len("label_values("):].rsplit(",", 1)[0])
if not exprs:
    sys.exit("no queries in the dashboard")
print("groups:\n- name: dashboard\n  rules:")
for i, e in enumerate(exprs):
    for var, val in (("$namespace", "ns"), ("$vpa", "vpa"), ("$container", ".+"), ("$__rate_interval", "5m")):
        e = e.replace(var, val)
    print("  - record: dashboard:query%d" % i)
    print("    expr: %s" % json.dumps(e))
PY
promtool check rules "$scratch/dashboard-rules.yaml" >/dev/null

# Metric names: ours (vpa_*) in the rules, the dashboard and the KSM config.
go run ./hack/metricnames >"$scratch/metricnames"
cut -f2 "$scratch/metricnames" | sort -u >"$scratch/registered"
# Label names (vpa_name, vpa_namespace) look like metric names.
cut -f3 "$scratch/metricnames" | tr ',' '\n' | sed '/^$/d' | sort -u >"$scratch/labels"
{
  grep -ohE '\bvpa_[a-z0-9_]+' "$dir/rules.yaml" "$dir/dashboard.json"
  # KSM's names are its metricNamePrefix, "_" and each metric's name.
  awk '/metricNamePrefix:/{p=$2} /^    - name: /{print p "_" $3}' "$dir/ksm-customresourcestate.yaml"
} | sort -u | comm -23 - "$scratch/labels" >"$scratch/used"
unknown=""
while read -r name; do
  # A histogram's series end in _bucket, _count and _sum.
  if ! grep -qxF "$name" "$scratch/registered" && ! grep -qxF "$(sed -E 's/_(bucket|count|sum)$//' <<<"$name")" "$scratch/registered"; then
    unknown+="  ${name}"$'\n'
  fi
done <"$scratch/used"
if [[ -n "$unknown" ]]; then
  echo "metrics used by the monitoring kit that no component registers:" >&2
  printf '%s' "$unknown" >&2
  exit 1
fi
echo "monitoring kit OK: $(wc -l <"$scratch/used") metrics, $(grep -c 'record:' "$scratch/dashboard-rules.yaml") dashboard queries"
