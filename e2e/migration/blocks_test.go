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

package migration

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParseBlocks(t *testing.T) {
	doc := "# T\n\n```sh\necho reader only\n```\n\n1. Step\n\n   ```sh migrate:a migrate:b\n   echo one\n\n   echo two\n   ```\n\n```sh migrate:b\necho three\n```\n"
	path := filepath.Join(t.TempDir(), "doc.md")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	blocks, err := parseBlocks(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"a", []string{"echo one\n\necho two\n"}},
		{"b", []string{"echo one\n\necho two\n", "echo three\n"}},
		{"c", nil},
	} {
		var got []string
		for _, b := range forPath(blocks, tc.path) {
			got = append(got, b.script)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("path %s: blocks %q, want %q", tc.path, got, tc.want)
		}
	}
}

// TestDocumentHasEveryPath: each path the e2e runs has blocks in docs/migration.md, so a block
// renamed or dropped from the document fails here, at once, and not as a path that runs nothing.
func TestDocumentHasEveryPath(t *testing.T) {
	blocks, err := parseBlocks(filepath.Join("..", "..", "docs", "migration.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{pathManifests, pathHelmTakeover, pathHelmRemove, pathStorage, pathRollback} {
		if len(forPath(blocks, p)) == 0 {
			t.Errorf("docs/migration.md has no block for path %q", p)
		}
	}
}
