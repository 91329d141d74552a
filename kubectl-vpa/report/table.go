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
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes r as a table with a totals line.
func WriteTable(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tTARGET\tMODE\tPODS\tCPU REQ\tCPU REC\tCPU SAVED\tMEM REQ (GiB)\tMEM REC (GiB)\tMEM SAVED (GiB)\tCONFIDENCE\tFLAGS")
	for _, row := range r.Rows {
		conf := "-"
		if row.Confidence != nil {
			conf = fmt.Sprintf("%.2fd", *row.Confidence)
		}
		flags := strings.Join(row.Flags, ",")
		if flags == "" {
			flags = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%.3f\t%.3f\t%+.3f\t%.3f\t%.3f\t%+.3f\t%s\t%s\n", row.Namespace, row.Name, row.Target, row.Mode, row.Pods,
			row.CPURequested, row.CPURecommended, row.CPUSavings, row.MemoryRequested, row.MemoryRecommended, row.MemorySavings, conf, flags)
	}
	t := r.Totals
	fmt.Fprintf(tw, "\nTotal: %d VPAs; cpu %.3f requested, %.3f recommended: %.3f cores to save, %.3f short; memory %.3f GiB requested, %.3f GiB recommended: %.3f GiB to save, %.3f GiB short\n",
		t.VPAs, t.CPURequested, t.CPURecommended, t.CPUSavings, t.CPUShortfall, t.MemoryRequested, t.MemoryRecommended, t.MemorySavings, t.MemoryShortfall)
	for _, row := range r.Rows {
		for i, f := range row.Flags {
			fmt.Fprintf(tw, "%s/%s: %s: %s\n", row.Namespace, row.Name, f, row.Notes[i])
		}
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(tw, "warning: %s\n", wn)
	}
	return tw.Flush()
}
