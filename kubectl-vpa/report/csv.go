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
	"encoding/csv"
	"io"
	"strconv"
	"strings"
)

// CSVHeader is the header row of WriteCSV, in its column order. Columns are
// only ever added at the end, so scripts that read them by position keep
// working.
var CSVHeader = []string{
	"namespace", "name", "target", "mode", "pods",
	"cpu_requested_cores", "cpu_recommended_cores", "cpu_savings_cores",
	"memory_requested_gib", "memory_recommended_gib", "memory_savings_gib",
	"confidence_days", "flags", "notes",
}

// WriteCSV writes r as CSV: the header row, then one row per VPA, fields
// quoted as RFC 4180 says (a field holding a comma, a double quote or a line
// break is enclosed in double quotes, and its double quotes are doubled).
// Numbers are plain decimals (cores, GiB, days) with a dot; an empty
// confidence means no checkpoint. Flags are separated by ";" and notes by
// "; ". Totals and warnings are not rows: the caller sums or prints them.
func WriteCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
	for _, row := range r.Rows {
		conf := ""
		if row.Confidence != nil {
			conf = strconv.FormatFloat(*row.Confidence, 'f', 2, 64)
		}
		rec := []string{
			row.Namespace, row.Name, row.Target, row.Mode, strconv.Itoa(row.Pods),
			num(row.CPURequested), num(row.CPURecommended), num(row.CPUSavings),
			num(row.MemoryRequested), num(row.MemoryRecommended), num(row.MemorySavings),
			conf, strings.Join(row.Flags, ";"), strings.Join(row.Notes, "; "),
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
