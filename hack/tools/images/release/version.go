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

package release

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// semver is a release version as the project tags it: v, three numbers
// without leading zeros, an optional pre-release and optional build metadata.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)` +
	`(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// ValidateVersion checks that v is a release version such as v1.2.3 or
// v1.3.0-rc.1.
func ValidateVersion(v string) error {
	if v == "" {
		return fmt.Errorf("VERSION is required, e.g. VERSION=v1.2.3")
	}
	if !semver.MatchString(v) {
		return fmt.Errorf("VERSION %q is not a release version: want v<major>.<minor>.<patch>[-<pre-release>], e.g. v1.2.3 or v1.3.0-rc.1", v)
	}
	if strings.Contains(v, "+") {
		return fmt.Errorf("VERSION %q has build metadata (+...), which image tags cannot carry", v)
	}
	return nil
}

// PreRelease reports whether v (valid) is a pre-release, e.g. v1.3.0-rc.1.
func PreRelease(v string) bool { return strings.Contains(v, "-") }

// ValidateRegistry checks that r is a registry host, with an optional port
// and path, under which the images and the chart are pushed:
// ghcr.io/openvpa, registry.example.com:5000/team/openvpa, 127.0.0.1:5000/openvpa.
func ValidateRegistry(r string) error {
	if r == "" {
		return fmt.Errorf("REGISTRY is required, e.g. REGISTRY=ghcr.io/openvpa")
	}
	if strings.Contains(r, "://") {
		return fmt.Errorf("REGISTRY %q: give host[:port]/path without a scheme (PLAIN_HTTP=1 selects http)", r)
	}
	if strings.HasSuffix(r, "/") {
		return fmt.Errorf("REGISTRY %q: no trailing slash", r)
	}
	host, _, _ := strings.Cut(r, "/")
	if !strings.ContainsAny(host, ".:") && host != "localhost" {
		return fmt.Errorf("REGISTRY %q: the first part must be a registry host (with a dot or a port, or localhost), e.g. ghcr.io/openvpa", r)
	}
	if _, err := name.NewRepository(r+"/vpa-recommender", name.StrictValidation); err != nil {
		return fmt.Errorf("REGISTRY %q: %w", r, err)
	}
	return nil
}
