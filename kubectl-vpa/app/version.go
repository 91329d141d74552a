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

package app

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/openvpa/openvpa/pkg/version"
)

// pluginName is the name the version line gives the plugin.
const pluginName = "kubectl-vpa"

const versionSynopsis = "kubectl vpa version [-o json|yaml]"

// runVersion is kubectl vpa version: the plugin's version, commit and
// build date, as one line or, with -o json or yaml, as an object that adds
// the Go version and platform. It reads no kubeconfig.
func runVersion(args []string, stdout, stderr io.Writer) error {
	var output string
	fs := pflag.NewFlagSet("kubectl vpa version", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVarP(&output, "output", "o", "", "Output format: json or yaml (default: one line).")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage:\n  %s\n\nFlags:\n%s", versionSynopsis, fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("version takes no arguments, got %q", strings.Join(fs.Args(), " "))
	}
	info := version.Get()
	switch output {
	case "":
		_, err := fmt.Fprintln(stdout, info.Line(pluginName))
		return err
	case "json", "yaml":
		return encode(stdout, output, info)
	}
	return fmt.Errorf("unsupported output format %q for version", output)
}
