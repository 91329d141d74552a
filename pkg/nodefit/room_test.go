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

package nodefit

import (
	"math"
	"reflect"
	"testing"
)

const gi = 1 << 30

func room(name string, cpu, memGi int64) Room {
	a := Amounts{CPU: cpu, Memory: memGi * gi}
	return Room{Node: name, Allocatable: a, Free: a}
}

func TestFrontier(t *testing.T) {
	rooms := []Room{room("a", 4000, 16), room("b", 8000, 8), room("c", 2000, 4), room("d", 8000, 8), room("e", 4000, 32)}
	var got []string
	for _, r := range Frontier(rooms) {
		got = append(got, r.Node)
	}
	// c is beaten by a; d ties b and goes (b is first by name); a is
	// beaten by e.
	if want := []string{"b", "e"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Frontier = %v, want %v", got, want)
	}
}

func TestBest(t *testing.T) {
	cpuHeavy := room("cpu-heavy", 16000, 8)
	memHeavy := room("mem-heavy", 4000, 64)
	small := room("small", 2000, 4)
	for _, tc := range []struct {
		name     string
		rooms    []Room
		d        Demand
		want     Amounts
		node     string
		allowed  Amounts
		fits, ok bool
	}{
		{"no rooms", nil, Demand{}, Amounts{CPU: 1000}, "", Amounts{}, false, false},
		{"several hold it: the one with most free cpu", []Room{small, cpuHeavy}, Demand{}, Amounts{CPU: 1000, Memory: gi},
			"cpu-heavy", Amounts{CPU: 16000, Memory: 8 * gi}, true, true},
		{"cpu-bound: the node with most cpu", []Room{cpuHeavy, memHeavy, small}, Demand{}, Amounts{CPU: 32000, Memory: 2 * gi},
			"cpu-heavy", Amounts{CPU: 16000, Memory: 8 * gi}, false, true},
		{"memory-bound: the node with most memory", []Room{cpuHeavy, memHeavy, small}, Demand{}, Amounts{CPU: 1000, Memory: 100 * gi},
			"mem-heavy", Amounts{CPU: 4000, Memory: 64 * gi}, false, true},
		{"both short: the most of both kept", []Room{cpuHeavy, memHeavy}, Demand{}, Amounts{CPU: 20000, Memory: 80 * gi},
			// cpu-heavy keeps 0.8 + 0.1, mem-heavy 0.2 + 0.8.
			"mem-heavy", Amounts{CPU: 4000, Memory: 64 * gi}, false, true},
		{"fixed part subtracted", []Room{cpuHeavy}, Demand{Fixed: Amounts{CPU: 6000, Memory: 2 * gi}}, Amounts{CPU: 32000, Memory: gi},
			"cpu-heavy", Amounts{CPU: 10000, Memory: 6 * gi}, false, true},
		{"fixed part does not fit", []Room{small}, Demand{Fixed: Amounts{CPU: 3000}}, Amounts{CPU: 100},
			"", Amounts{}, false, false},
		{"fixed part fills the node", []Room{small}, Demand{Fixed: Amounts{CPU: 2000}}, Amounts{CPU: 100},
			"", Amounts{}, false, false},
		{"init container floor excludes a node", []Room{small, memHeavy}, Demand{Floor: Amounts{Memory: 8 * gi}}, Amounts{CPU: 8000},
			"mem-heavy", Amounts{CPU: 4000, Memory: 64 * gi}, false, true},
		{"pinned cpu is not capped", []Room{small}, Demand{Fixed: Amounts{CPU: 1000}, PinnedCPU: true}, Amounts{CPU: 8000, Memory: 2 * gi},
			"small", Amounts{CPU: math.MaxInt64, Memory: 4 * gi}, true, true},
		{"pinned cpu larger than the node", []Room{small}, Demand{Fixed: Amounts{CPU: 3000}, PinnedCPU: true}, Amounts{Memory: gi},
			"", Amounts{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := Best(tc.rooms, tc.d, tc.want)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if c.Node != tc.node || c.Allowed != tc.allowed || c.Fits != tc.fits {
				t.Errorf("Best = %s allowed %+v fits %v, want %s allowed %+v fits %v", c.Node, c.Allowed, c.Fits, tc.node, tc.allowed, tc.fits)
			}
		})
	}
}

func TestAmounts(t *testing.T) {
	a := Amounts{CPU: math.MaxInt64 - 1, Memory: 5}
	if got := a.Add(Amounts{CPU: 10, Memory: 1}); got.CPU != math.MaxInt64 || got.Memory != 6 {
		t.Errorf("Add = %+v", got)
	}
	if got := (Amounts{CPU: 1500, Memory: 3 * gi}).String(); got != "cpu 1500m, memory 3Gi" {
		t.Errorf("String = %q", got)
	}
}
