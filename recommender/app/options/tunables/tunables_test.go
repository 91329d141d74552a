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

package tunables

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/openvpa/openvpa/recommender/estimator"
	"github.com/openvpa/openvpa/recommender/model"
)

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		estimator string
		args      []string
		wantErr   string
	}{
		"defaults":                 {},
		"every known estimator":    {estimator: "adaptive", args: []string{"--peak-memory-margin=0.2", "--adaptive-memory-margins=0,0.25"}},
		"peak":                     {estimator: "peak"},
		"unknown estimator":        {estimator: "magic", wantErr: `--estimator: unknown estimator "magic" (known: percentile, peak, adaptive)`},
		"bad shared percentile":    {args: []string{"--target-memory-percentile=2"}, wantErr: "--estimator: target-memory-percentile must be in [0, 1], got 2"},
		"bad peak setting":         {estimator: "peak", args: []string{"--peak-memory-lower-bound-fraction=2"}, wantErr: "--estimator: peak memory lower bound fraction must be in (0, 1], got 2"},
		"peak setting unused":      {estimator: "percentile", args: []string{"--peak-memory-lower-bound-fraction=2"}},
		"bad adaptive arms":        {estimator: "adaptive", args: []string{"--adaptive-memory-horizons=24h,-1h"}, wantErr: "--estimator: adaptive memory horizon must be > 0, got -1h0m0s"},
		"adaptive CPU above bound": {estimator: "adaptive", args: []string{"--adaptive-cpu-target-percentile=0.97"}, wantErr: "above the CPU upper bound percentile 0.95"},
		"bad model setting":        {args: []string{"--memory-aggregation-interval-count=0"}, wantErr: "memory aggregation interval count must be > 0, got 0"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, m := estimator.DefaultOptions(), *model.DefaultConfig()
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			AddEstimatorFlags(fs, &o)
			AddModelFlags(fs, &m)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := Validate(tc.estimator, o, m)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
