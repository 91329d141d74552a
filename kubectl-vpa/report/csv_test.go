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
	"bytes"
	"encoding/csv"
	"reflect"
	"testing"
)

func TestWriteCSVQuotesAsRFC4180(t *testing.T) {
	conf := 0.5
	r := &Report{Rows: []Row{{
		Namespace: "shop", Name: "web", Target: "Deployment/web", Mode: "Auto", Pods: 2,
		CPURequested: 1, CPURecommended: 0.25, CPUSavings: 0.75, MemoryRequested: 2, MemoryRecommended: 2.5, MemorySavings: -0.5,
		Confidence: &conf, Flags: []string{"clipped", "overlap"},
		Notes: []string{`capped by "maxAllowed", memory`, "line\nbreak"},
	}}}
	var b bytes.Buffer
	if err := WriteCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	want := "namespace,name,target,mode,pods,cpu_requested_cores,cpu_recommended_cores,cpu_savings_cores,memory_requested_gib,memory_recommended_gib,memory_savings_gib,confidence_days,flags,notes\n" +
		"shop,web,Deployment/web,Auto,2,1.000,0.250,0.750,2.000,2.500,-0.500,0.50,clipped;overlap,\"capped by \"\"maxAllowed\"\", memory; line\nbreak\"\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	// A CSV reader gets the fields back.
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || !reflect.DeepEqual(recs[0], CSVHeader) || recs[1][13] != "capped by \"maxAllowed\", memory; line\nbreak" {
		t.Errorf("read back %q", recs)
	}
}
