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

package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLastServing: the hand-over is served once the survivors' latest
// "Serving new shards" lines add up to every shard, at the latest such line
// after the kill.
func TestLastServing(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) *replicaProc {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return &replicaProc{res: &replicaResult{logPath: path}}
	}
	day := time.Date(2026, 12, 3, 0, 0, 0, 0, time.Local)
	killed := day.Add(12*time.Hour + 30*time.Second)
	before := `I1203 12:00:05.000001   1 shards.go:96] "Serving new shards" shards=[0 1 2 3] serving=4` + "\n"
	b := write("b.log", before)
	if _, ok, err := lastServing([]*replicaProc{b}, killed, 8); err != nil || ok {
		t.Fatalf("served = %v, %v before the survivor took the shards", ok, err)
	}
	b = write("b.log", before+`I1203 12:00:52.250000   1 shards.go:96] "Serving new shards" shards=[4 5 6 7] serving=8`+"\n")
	last, ok, err := lastServing([]*replicaProc{b}, killed, 8)
	if err != nil || !ok {
		t.Fatalf("served = %v, %v once the survivor serves every shard", ok, err)
	}
	if want := day.Add(12*time.Hour + 52*time.Second + 250*time.Millisecond); !last.Equal(want) {
		t.Errorf("served at %v, want %v", last, want)
	}
}
