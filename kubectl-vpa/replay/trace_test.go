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

package replay

import (
	"bytes"
	"compress/gzip"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestReadTraceErrors(t *testing.T) {
	tests := map[string]struct {
		format   string
		input    string
		wantLine int
		wantErr  string
	}{
		"missing header": {
			input:    "1372629804,w,c,0.5,100\n",
			wantLine: 1, wantErr: "missing header",
		},
		"header lacks a required column": {
			input:    "timestamp,workload,container,cpu_cores\n",
			wantLine: 1, wantErr: `missing header column "memory_bytes"`,
		},
		"unparsable number": {
			input:    "timestamp,workload,container,cpu_cores,memory_bytes\n1,w,c,0.5,100\n2,w,c,0.5,1O0\n",
			wantLine: 3, wantErr: `memory_bytes: cannot parse "1O0" as a number`,
		},
		"negative usage": {
			input:    "timestamp,workload,container,cpu_cores,memory_bytes\n1,w,c,0.5,100\n2,w,c,0.5,100\n3,w,c,-0.1,100\n",
			wantLine: 4, wantErr: "cpu_cores: negative value -0.1",
		},
		"time goes backwards within a container": {
			input: "timestamp,workload,container,cpu_cores,memory_bytes\n" +
				"2013-07-01T00:10:00Z,w,c,0.5,100\n2013-07-01T00:00:00Z,w,other,0.5,100\n2013-07-01T00:05:00Z,w,c,0.5,100\n",
			wantLine: 4, wantErr: "timestamp 2013-07-01T00:05:00Z of w/c goes backwards",
		},
		"unparsable timestamp": {
			input:    "timestamp,workload,container,cpu_cores,memory_bytes\nyesterday,w,c,0.5,100\n",
			wantLine: 2, wantErr: "cannot parse \"yesterday\"",
		},
		"wrong field count": {
			input:    "timestamp,workload,container,cpu_cores,memory_bytes\n1,w,c,0.5\n",
			wantLine: 2, wantErr: "4 fields, the header has 5",
		},
		"bitbrains without header": {
			format:   FormatBitbrains,
			input:    "1,1372629804,2,5852,87.8,8218624,1034593\n",
			wantLine: 1, wantErr: "missing header",
		},
		"bitbrains negative usage": {
			format:   FormatBitbrains,
			input:    strings.Join(bitbrainsHeader, ",") + "\n1,1372629804,2,5852,87.8,8218624,1034593\n1,1372630104,2,5852,87.8,8218624,-5\n",
			wantLine: 3, wantErr: "mem_usage_kb: negative value -5",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ReadTrace(strings.NewReader(tc.input), "t.csv", tc.format)
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("got error %v, want a LineError", err)
			}
			if le.Line != tc.wantLine || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("got %q (line %d), want line %d containing %q", err, le.Line, tc.wantLine, tc.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "t.csv:") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestReadTraceNative(t *testing.T) {
	input := "timestamp,workload,container,cpu_cores,memory_bytes,cpu_request_cores,memory_request_bytes\n" +
		"1372629600,web,app,0.25,1e8,1,2e8\n" +
		"1372629600,web,app,0.30,1e8,1,2e8\n" + // exact duplicate timestamp: dropped
		"2013-06-30T22:05:00Z,web,app,0.5,1.5e8,1,2e8\n" +
		"1372629600,web,sidecar,0.01,1e7,0.1,5e7\n" +
		"1372629600.5,db,main,2,4e9,4,8e9\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(input))
	zw.Close()
	for name, raw := range map[string][]byte{"plain": []byte(input), "gzip": gz.Bytes()} {
		t.Run(name, func(t *testing.T) {
			tr, err := ReadTrace(bytes.NewReader(raw), "t.csv", "")
			if err != nil {
				t.Fatal(err)
			}
			if !tr.HasRequests || tr.Rows != 5 || tr.Duplicates != 1 || tr.Samples() != 4 || len(tr.Workloads) != 2 {
				t.Fatalf("got requests=%v rows=%d dups=%d samples=%d workloads=%d", tr.HasRequests, tr.Rows, tr.Duplicates, tr.Samples(), len(tr.Workloads))
			}
			web := tr.Workloads[0]
			if web.Name != "web" || len(web.Containers) != 2 || web.Containers[0].Name != "app" {
				t.Fatalf("unexpected workload %+v", web)
			}
			app := web.Containers[0].Samples
			want := Sample{Time: time.Date(2013, 6, 30, 22, 5, 0, 0, time.UTC), CPU: 0.5, Memory: 1.5e8, CPURequest: 1, MemoryRequest: 2e8}
			if len(app) != 2 || app[0].CPU != 0.25 || !app[1].Time.Equal(want.Time) || app[1].CPU != want.CPU || app[1].Memory != want.Memory ||
				app[1].CPURequest != want.CPURequest || app[1].MemoryRequest != want.MemoryRequest {
				t.Errorf("got samples %+v", app)
			}
			if got := tr.Workloads[1].Containers[0].Samples[0].Time; got.UnixMilli() != 1372629600500 {
				t.Errorf("fractional Unix time read as %v", got)
			}
		})
	}
}

func TestReadTraceBitbrains(t *testing.T) {
	input := strings.Join(bitbrainsHeader, ",") + "\n" +
		"7,1372629804,0,0,0,0,0\n" + // not provisioned yet: dropped
		"7,1372630104,2,5852,1463,8218624,1034593\n" +
		"7,1372630404,4,0,0,8218624,1000\n" + // zero capacity: dropped
		"7,1372630704,4,11704,2926,16437248,1\n"
	tr, err := ReadTrace(strings.NewReader(input), "bb.csv", FormatBitbrains)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Unprovisioned != 2 || tr.Samples() != 2 || !tr.HasRequests {
		t.Fatalf("unprovisioned=%d samples=%d", tr.Unprovisioned, tr.Samples())
	}
	w := tr.Workloads[0]
	if w.Name != "vm-7" || w.Containers[0].Name != "vm" {
		t.Fatalf("got %s/%s", w.Name, w.Containers[0].Name)
	}
	s := w.Containers[0].Samples
	// 1463 MHz over 5852 MHz / 2 cores = 0.5 cores; 2926 / (11704 / 4) = 1 core.
	if s[0].CPU != 0.5 || s[0].Memory != 1034593*1024 || s[0].CPURequest != 2 || s[0].MemoryRequest != 8218624*1024 {
		t.Errorf("first sample %+v", s[0])
	}
	if s[1].CPU != 1 || s[1].Memory != 1024 || s[1].CPURequest != 4 || s[1].MemoryRequest != 16437248*1024 {
		t.Errorf("second sample %+v", s[1])
	}
}

func TestReadTraceUnknownFormat(t *testing.T) {
	if _, err := ReadTrace(strings.NewReader(""), "x", "json"); err == nil || !strings.Contains(err.Error(), `unknown input format "json"`) {
		t.Errorf("got %v", err)
	}
}
