/*
Copyright The OpenVPA Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"
)

// WriteHTML writes r as one self-contained HTML page: the totals, a table
// whose columns sort on a click, and per VPA a small SVG chart of requested
// against recommended cpu and memory. Nothing is loaded from elsewhere.
func WriteHTML(w io.Writer, r *Report) error {
	return page.Execute(w, r)
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"chart": chart,
	"f3":    func(x float64) string { return fmt.Sprintf("%.3f", x) },
	"s3":    func(x float64) string { return fmt.Sprintf("%+.3f", x) },
	"conf": func(c *float64) string {
		if c == nil {
			return "-"
		}
		return fmt.Sprintf("%.2f", *c)
	},
	"confValue": func(c *float64) string {
		if c == nil {
			return "-1"
		}
		return fmt.Sprintf("%g", *c)
	},
	"join": strings.Join,
	"scope": func(ns string) string {
		return map[bool]string{true: "all namespaces", false: "namespace " + ns}[ns == ""]
	},
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>VPA report</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
table { border-collapse: collapse; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: right; vertical-align: middle; }
th { cursor: pointer; background: #f3f3f3; user-select: none; }
td.l, th.l { text-align: left; }
.flag { display: inline-block; white-space: nowrap; background: #fde2e1; color: #8a1c14; border-radius: 3px; padding: 0 4px; margin: 1px; font-size: 85%; }
.pos { color: #176e2c; } .neg { color: #a4161a; }
.legend span { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 12px; }
</style>
</head>
<body>
<h1>VPA report</h1>
<p id="summary">{{scope .Namespace}}, generated {{.Generated.UTC.Format "2006-01-02T15:04:05Z"}}: {{.Totals.VPAs}} VPAs.
CPU: {{f3 .Totals.CPURequested}} cores requested, {{f3 .Totals.CPURecommended}} recommended, <b>{{f3 .Totals.CPUSavings}} cores to save</b>, {{f3 .Totals.CPUShortfall}} short.
Memory: {{f3 .Totals.MemoryRequested}} GiB requested, {{f3 .Totals.MemoryRecommended}} GiB recommended, <b>{{f3 .Totals.MemorySavings}} GiB to save</b>, {{f3 .Totals.MemoryShortfall}} GiB short.</p>
<p class="legend">Charts:<span style="background:#8da9c4"></span>requested<span style="background:#134074"></span>recommended (cpu left, memory right, each scaled to its larger bar)</p>
<table id="vpas">
<thead><tr>
<th class="l" data-type="text" data-key="namespace">Namespace</th><th class="l" data-type="text" data-key="name">VPA</th><th class="l" data-type="text" data-key="target">Target</th><th class="l" data-type="text" data-key="mode">Mode</th>
<th data-type="num" data-key="pods">Pods</th><th data-type="num" data-key="cpu-requested">CPU requested</th><th data-type="num" data-key="cpu-recommended">CPU recommended</th><th data-type="num" data-key="cpu-saved">CPU saved</th>
<th data-type="num" data-key="memory-requested">Memory requested (GiB)</th><th data-type="num" data-key="memory-recommended">Memory recommended (GiB)</th><th data-type="num" data-key="memory-saved">Memory saved (GiB)</th>
<th data-type="num" data-key="confidence">Confidence (days)</th><th class="l" data-type="text" data-key="flags">Flags</th><th class="l">Chart</th>
</tr></thead>
<tbody>
{{range .Rows}}{{$row := .}}<tr>
<td class="l">{{.Namespace}}</td><td class="l">{{.Name}}</td><td class="l">{{.Target}}</td><td class="l">{{.Mode}}</td>
<td data-value="{{.Pods}}">{{.Pods}}</td>
<td data-value="{{.CPURequested}}">{{f3 .CPURequested}}</td><td data-value="{{.CPURecommended}}">{{f3 .CPURecommended}}</td>
<td data-value="{{.CPUSavings}}" class="{{if lt .CPUSavings 0.0}}neg{{else}}pos{{end}}">{{s3 .CPUSavings}}</td>
<td data-value="{{.MemoryRequested}}">{{f3 .MemoryRequested}}</td><td data-value="{{.MemoryRecommended}}">{{f3 .MemoryRecommended}}</td>
<td data-value="{{.MemorySavings}}" class="{{if lt .MemorySavings 0.0}}neg{{else}}pos{{end}}">{{s3 .MemorySavings}}</td>
<td data-value="{{confValue .Confidence}}">{{conf .Confidence}}</td>
<td class="l">{{range $i, $f := .Flags}}<span class="flag" title="{{index $row.Notes $i}}">{{$f}}</span>{{end}}</td>
<td class="l">{{chart .}}</td>
</tr>
{{end}}</tbody>
</table>
{{range .Warnings}}<p>warning: {{.}}</p>{{end}}
<script>
// Click a column header to sort by it (again to reverse). The page opens
// sorted when its address ends in #sort=KEY or #sort=KEY-desc, KEY being a
// header's data-key (e.g. #sort=cpu-saved-desc).
(function () {
  var table = document.getElementById("vpas");
  var heads = table.tHead.rows[0].cells;
  function sortBy(col, asc) {
    var th = heads[col];
    th.dataset.dir = asc ? "asc" : "desc";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[col], y = b.cells[col], r;
      if (th.dataset.type === "num") {
        r = parseFloat(x.dataset.value) - parseFloat(y.dataset.value);
      } else {
        r = x.textContent.localeCompare(y.textContent);
      }
      return asc ? r : -r;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  for (var i = 0; i < heads.length; i++) {
    (function (col, th) {
      if (!th.dataset.type) return;
      th.addEventListener("click", function () { sortBy(col, th.dataset.dir !== "asc"); });
    })(i, heads[i]);
  }
  var m = /^#sort=([a-z-]+?)(-desc)?$/.exec(window.location.hash);
  if (m) {
    for (var j = 0; j < heads.length; j++) {
      if (heads[j].dataset.key === m[1]) sortBy(j, !m[2]);
    }
  }
})();
</script>
</body>
</html>
`))

// chart draws requested against recommended cpu (left pair) and memory
// (right pair), each pair scaled to its larger value.
func chart(r Row) template.HTML {
	const w, h, bar = 120, 36, 12
	pair := func(x0 int, req, rec float64, label string) string {
		top := req
		if rec > top {
			top = rec
		}
		hr, hc := 0.0, 0.0
		if top > 0 {
			hr, hc = req/top*float64(h-10), rec/top*float64(h-10)
		}
		return fmt.Sprintf(`<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="#8da9c4"><title>%s requested %.3f</title></rect>`+
			`<rect x="%d" y="%.1f" width="%d" height="%.1f" fill="#134074"><title>%s recommended %.3f</title></rect>`+
			`<text x="%d" y="%d" font-size="8">%s</text>`,
			x0, float64(h-10)-hr, bar, hr, label, req, x0+bar+2, float64(h-10)-hc, bar, hc, label, rec, x0, h-1, label)
	}
	svg := fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="%s/%s requested and recommended">%s%s</svg>`,
		w, h, template.HTMLEscapeString(r.Namespace), template.HTMLEscapeString(r.Name),
		pair(4, r.CPURequested, r.CPURecommended, "cpu"), pair(64, r.MemoryRequested, r.MemoryRecommended, "mem"))
	return template.HTML(svg) // #nosec G203 -- built here from numbers and escaped names
}
