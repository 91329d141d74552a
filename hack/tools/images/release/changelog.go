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
)

// changelogHeading matches a version heading of a keep-a-changelog file:
// "## [1.2.3] - 2026-12-05", "## [v1.2.3]", "## [Unreleased]".
var changelogHeading = regexp.MustCompile(`^## \[([^\]]+)\]`)

// ChangelogSection returns the body of version's section of a
// keep-a-changelog file, without its heading. A version has its own section
// ("## [1.2.3]" or "## [v1.2.3]"); a pre-release without one takes the
// Unreleased section. A release without its own section is an error, as is
// an empty section.
func ChangelogSection(changelog, version string) (string, error) {
	sections := map[string]string{}
	var current string
	var body strings.Builder
	flush := func() {
		if current != "" {
			sections[current] = strings.TrimSpace(body.String())
		}
		body.Reset()
	}
	for _, line := range strings.Split(changelog, "\n") {
		if m := changelogHeading.FindStringSubmatch(line); m != nil {
			flush()
			current = strings.ToLower(strings.TrimPrefix(m[1], "v"))
			continue
		}
		if strings.HasPrefix(line, "[") && strings.Contains(line, "]: ") {
			// Link reference definitions at the end belong to no section.
			flush()
			current = ""
			continue
		}
		if current != "" {
			body.WriteString(line + "\n")
		}
	}
	flush()
	key := strings.ToLower(strings.TrimPrefix(version, "v"))
	s, ok := sections[key]
	from := version
	if !ok {
		if !PreRelease(version) {
			return "", fmt.Errorf("CHANGELOG.md has no section for %s: move the Unreleased entries under \"## [%s] - <date>\"", version, key)
		}
		if s, ok = sections["unreleased"]; !ok {
			return "", fmt.Errorf("CHANGELOG.md has neither a section for %s nor an Unreleased section", version)
		}
		from = "Unreleased"
	}
	if s == "" {
		return "", fmt.Errorf("CHANGELOG.md: the %s section is empty", from)
	}
	return s + "\n", nil
}
