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

package explain

import "testing"

func TestPercentile(t *testing.T) {
	tests := map[string]struct {
		p    float64
		want string
	}{
		"the upstream target":          {p: 0.9, want: "P90"},
		"the adaptive CPU target":      {p: 0.93, want: "P93"},
		"a product just below a whole": {p: 0.29, want: "P29"},
		"the peak estimator's 14 days": {p: 1 - 0.5*0.5*0.5*0.5*0.5*0.5*0.5*0.5*0.5*0.5*0.5*0.5*0.5*0.5/2, want: "P99.996"},
		"truncated, not rounded up":    {p: 0.99999, want: "P99.999"},
		"never P100 below the maximum": {p: 1 - 1e-12, want: "P99.999"},
		"the maximum":                  {p: 1, want: "P100"},
		"three decimals, truncated":    {p: 0.123456, want: "P12.345"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := percentile(tc.p); got != tc.want {
				t.Errorf("percentile(%v) = %s, want %s", tc.p, got, tc.want)
			}
		})
	}
}
