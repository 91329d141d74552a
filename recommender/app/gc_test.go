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
