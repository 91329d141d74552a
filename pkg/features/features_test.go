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

package features

import (
	"testing"

	"github.com/spf13/pflag"
)

func TestGateDefaultsAndFlag(t *testing.T) {
	g := NewGate()
	if g.Enabled(PerVPAConfig) || g.Enabled(CPUStartupBoost) || g.Enabled(NativeSidecar) || !g.Enabled(InPlace) {
		t.Fatalf("unexpected defaults: PerVPAConfig=%v CPUStartupBoost=%v InPlace=%v", g.Enabled(PerVPAConfig), g.Enabled(CPUStartupBoost), g.Enabled(InPlace))
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddFlag(fs, g)
	if err := fs.Parse([]string{"--feature-gates=PerVPAConfig=true,InPlace=true"}); err != nil {
		t.Fatal(err)
	}
	if !g.Enabled(PerVPAConfig) {
		t.Error("PerVPAConfig=true was not applied")
	}
	if err := fs.Parse([]string{"--feature-gates=NoSuchGate=true"}); err == nil {
		t.Error("an unknown gate must be rejected")
	}
}
