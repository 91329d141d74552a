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
	"bufio"
	"fmt"
	"os"
	"strings"
)

// block is a shell block of the migration document.
type block struct {
	// paths are the names after "migrate:" in the block's info string.
	paths []string
	// line is where the block starts in the document, for messages.
	line int
	// script is the block's text, without its fence and indentation.
	script string
}

// parseBlocks reads the fenced blocks whose info string names at least one migrate: path.
func parseBlocks(path string) ([]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		blocks []block
		cur    *block
		indent string
		body   strings.Builder
	)
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		trimmed := strings.TrimLeft(line, " ")
		if cur == nil {
			if !strings.HasPrefix(trimmed, "```") {
				continue
			}
			var paths []string
			for _, field := range strings.Fields(strings.TrimPrefix(trimmed, "```")) {
				if p, ok := strings.CutPrefix(field, "migrate:"); ok && p != "" {
					paths = append(paths, p)
				}
			}
			if len(paths) == 0 {
				// A block for readers only; skip to its end.
				cur = &block{line: -n}
			} else {
				cur = &block{paths: paths, line: n}
			}
			indent = line[:len(line)-len(trimmed)]
			body.Reset()
			continue
		}
		if trimmed == "```" {
			if cur.line > 0 {
				cur.script = body.String()
				blocks = append(blocks, *cur)
			}
			cur = nil
			continue
		}
		if cur.line > 0 {
			if line != "" && !strings.HasPrefix(line, indent) {
				return nil, fmt.Errorf("%s:%d: line less indented than its block's fence", path, n)
			}
			body.WriteString(strings.TrimPrefix(line, indent))
			body.WriteByte('\n')
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: a block is not closed", path)
	}
	return blocks, nil
}

// forPath returns the blocks of one path, in the document's order.
func forPath(blocks []block, path string) []block {
	var out []block
	for _, b := range blocks {
		for _, p := range b.paths {
			if p == path {
				out = append(out, b)
				break
			}
		}
	}
	return out
}
