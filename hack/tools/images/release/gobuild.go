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
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// VersionPackage is where the binaries keep what they were built from.
const VersionPackage = "github.com/openvpa/openvpa/pkg/version"

// GoBuilder builds with the go command in the repository, static and
// without local paths, stamped with the release's version.
type GoBuilder struct {
	// Go is the go command; empty means "go".
	Go string
	// RepoRoot is the main module's folder.
	RepoRoot string
	// Meta is stamped into pkg/version.
	Meta Meta
}

// Ldflags are the linker flags that stamp m into pkg/version, as the
// Makefile's VERSION_LDFLAGS do.
func Ldflags(m Meta) string {
	return fmt.Sprintf("-X %[1]s.version=%[2]s -X %[1]s.commit=%[3]s -X %[1]s.buildDate=%[4]s",
		VersionPackage, m.Version, m.Commit, m.Labels("")[LabelCreated])
}

// Build runs go build for p.
func (b GoBuilder) Build(ctx context.Context, pkg string, p Platform, out string) error {
	goCmd := b.Go
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-buildvcs=false", "-ldflags", Ldflags(b.Meta), "-o", out, pkg)
	cmd.Dir = b.RepoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, stderr.String())
	}
	return nil
}

// CheckClean refuses a tree with changes: status is the output of
// `git status --porcelain`.
func CheckClean(status string) error {
	status = strings.TrimSpace(status)
	if status == "" {
		return nil
	}
	lines := strings.Split(status, "\n")
	if len(lines) > 10 {
		lines = append(lines[:10], fmt.Sprintf("... and %d more", len(lines)-10))
	}
	return fmt.Errorf("the working tree has changes; commit them, or set ALLOW_DIRTY=1 to release anyway:\n%s", strings.Join(lines, "\n"))
}

// GitStatus returns `git status --porcelain` in dir.
func GitStatus(ctx context.Context, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", "status", "--porcelain")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git status in %s: %w", dir, err)
	}
	return string(out), nil
}
