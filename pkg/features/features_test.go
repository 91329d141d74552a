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
