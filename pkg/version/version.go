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

// Package version is what a binary was built from: its version, commit and
// build date, stamped at link time by the Makefile
//
//	go build -ldflags "-X github.com/openvpa/openvpa/pkg/version.version=v1.2.3
//	    -X github.com/openvpa/openvpa/pkg/version.commit=<sha>
//	    -X github.com/openvpa/openvpa/pkg/version.buildDate=2026-12-05T00:00:00Z"
//
// and, for a plain go build or go install, read from the build information
// Go embeds (the module version, vcs.revision, vcs.time) where it has them.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set with -ldflags -X; empty when the build did not set them.
var (
	version   string
	commit    string
	buildDate string
)

// Dev is the version of a build that names none.
const Dev = "v0.0.0-dev"

// unknown stands for a commit or build date the build did not record.
const unknown = "unknown"

// Info is what a binary was built from.
type Info struct {
	// Version is the release, e.g. v1.2.3, or the output of git describe.
	Version string `json:"version"`
	// Commit is the full commit hash, "unknown" when not recorded.
	Commit string `json:"commit"`
	// BuildDate is the build date in RFC 3339 (the commit's date, for
	// reproducible builds), "unknown" when not recorded.
	BuildDate string `json:"buildDate"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is the binary's OS/architecture, e.g. linux/amd64.
	Platform string `json:"platform"`
}

// Get returns what this binary was built from.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(Info{Version: version, Commit: commit, BuildDate: buildDate}, bi)
}

// resolve completes what the linker set with the embedded build
// information bi (nil when there is none), then with the defaults.
func resolve(linked Info, bi *debug.BuildInfo) Info {
	info := linked
	info.GoVersion = runtime.Version()
	info.Platform = runtime.GOOS + "/" + runtime.GOARCH
	if bi != nil {
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		settings := map[string]string{}
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		if info.Commit == "" {
			info.Commit = settings["vcs.revision"]
			if info.Commit != "" && settings["vcs.modified"] == "true" {
				info.Commit += "-dirty"
			}
		}
		if info.BuildDate == "" {
			info.BuildDate = settings["vcs.time"]
		}
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
	}
	if info.Version == "" {
		info.Version = Dev
	}
	if info.Commit == "" {
		info.Commit = unknown
	}
	if info.BuildDate == "" {
		info.BuildDate = unknown
	}
	return info
}

// String is the version with its commit and build date, e.g.
// "v1.2.3 (commit 0123abc, built 2026-12-05T00:00:00Z)".
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, built %s)", i.Version, i.Commit, i.BuildDate)
}

// Line is what a binary's --version prints: its name, the word version and
// String, e.g. "vpa-recommender version v1.2.3 (commit 0123abc, built
// 2026-12-05T00:00:00Z)".
func (i Info) Line(name string) string {
	return name + " version " + i.String()
}

// KeysAndValues are the structured logging pairs of the version, commit,
// build date and Go version, for the line a component logs at start-up.
func (i Info) KeysAndValues() []any {
	return []any{"version", i.Version, "commit", i.Commit, "buildDate", i.BuildDate, "goVersion", i.GoVersion}
}
