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

package version

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestResolve(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	tests := map[string]struct {
		linked Info
		bi     *debug.BuildInfo
		want   Info
	}{
		"ldflags win": {
			linked: Info{Version: "v1.2.3", Commit: "0123abc", BuildDate: "2026-12-05T00:00:00Z"},
			bi:     &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}, Settings: vcs("vcs.revision", "fff", "vcs.time", "2000-01-01T00:00:00Z")},
			want:   Info{Version: "v1.2.3", Commit: "0123abc", BuildDate: "2026-12-05T00:00:00Z"},
		},
		"nothing recorded": {
			want: Info{Version: "v0.0.0-dev", Commit: "unknown", BuildDate: "unknown"},
		},
		"plain go build without vcs": {
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			want: Info{Version: "v0.0.0-dev", Commit: "unknown", BuildDate: "unknown"},
		},
		"go install at a version": {
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}},
			want: Info{Version: "v1.4.0", Commit: "unknown", BuildDate: "unknown"},
		},
		"go build with vcs stamping": {
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs.revision", "0123abc", "vcs.time", "2026-12-05T00:00:00Z", "vcs.modified", "false")},
			want: Info{Version: "v0.0.0-dev", Commit: "0123abc", BuildDate: "2026-12-05T00:00:00Z"},
		},
		"modified tree": {
			bi:   &debug.BuildInfo{Settings: vcs("vcs.revision", "0123abc", "vcs.modified", "true")},
			want: Info{Version: "v0.0.0-dev", Commit: "0123abc-dirty", BuildDate: "unknown"},
		},
		"only the version linked": {
			linked: Info{Version: "v1.2.3"},
			bi:     &debug.BuildInfo{Settings: vcs("vcs.revision", "0123abc", "vcs.time", "2026-12-05T00:00:00Z")},
			want:   Info{Version: "v1.2.3", Commit: "0123abc", BuildDate: "2026-12-05T00:00:00Z"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := resolve(tc.linked, tc.bi)
			tc.want.GoVersion = runtime.Version()
			tc.want.Platform = runtime.GOOS + "/" + runtime.GOARCH
			if got != tc.want {
				t.Errorf("resolve = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestFormats(t *testing.T) {
	i := Info{Version: "v1.2.3", Commit: "0123abc", BuildDate: "2026-12-05T00:00:00Z", GoVersion: "go1.26.0", Platform: "linux/arm64"}
	if got, want := i.String(), "v1.2.3 (commit 0123abc, built 2026-12-05T00:00:00Z)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got, want := i.Line("vpa-recommender"), "vpa-recommender version v1.2.3 (commit 0123abc, built 2026-12-05T00:00:00Z)"; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
	data, err := json.Marshal(i)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), `{"version":"v1.2.3","commit":"0123abc","buildDate":"2026-12-05T00:00:00Z","goVersion":"go1.26.0","platform":"linux/arm64"}`; got != want {
		t.Errorf("JSON = %s, want %s", got, want)
	}
	kv := i.KeysAndValues()
	want := []any{"version", "v1.2.3", "commit", "0123abc", "buildDate", "2026-12-05T00:00:00Z", "goVersion", "go1.26.0"}
	if len(kv) != len(want) {
		t.Fatalf("KeysAndValues = %v, want %v", kv, want)
	}
	for n := range want {
		if kv[n] != want[n] {
			t.Errorf("KeysAndValues = %v, want %v", kv, want)
			break
		}
	}
}

// TestGet: a test binary is linked without -X; Get still reports a version.
func TestGet(t *testing.T) {
	i := Get()
	if i.Version == "" || i.Commit == "" || i.BuildDate == "" || i.GoVersion == "" {
		t.Errorf("Get = %+v, want every field set", i)
	}
}
