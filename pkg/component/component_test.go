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

package component

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestSectionsUsage(t *testing.T) {
	s := &Sections{}
	s.FlagSet("first").String("a", "", "flag a")
	s.FlagSet("second").Bool("b", false, "flag b")
	var out bytes.Buffer
	s.Usage(&out, "Usage: x [flags]")
	got := out.String()
	first, second := strings.Index(got, "First flags:"), strings.Index(got, "Second flags:")
	if !strings.HasPrefix(got, "Usage: x [flags]\n") || first < 0 || second < first || !strings.Contains(got[first:second], "--a string") {
		t.Errorf("usage:\n%s", got)
	}
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	s.AddTo(fs)
	if fs.Lookup("a") == nil || fs.Lookup("b") == nil {
		t.Error("AddTo did not add every section's flags")
	}
}
