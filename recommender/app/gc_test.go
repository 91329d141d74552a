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

package app

import (
	"runtime/debug"
	"testing"
)

func TestDefaultGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	tests := map[string]struct {
		gogc string
		want int
	}{
		"GOGC unset: the recommender's default": {gogc: "", want: DefaultGCPercent},
		"GOGC set: left alone":                  {gogc: "200", want: 100},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			debug.SetGCPercent(100)
			set := defaultGC(func(k string) string {
				if k == "GOGC" {
					return tc.gogc
				}
				return ""
			})
			if got := debug.SetGCPercent(100); got != tc.want || set != (tc.gogc == "") {
				t.Errorf("GC percent = %d (set %v), want %d", got, set, tc.want)
			}
		})
	}
}
