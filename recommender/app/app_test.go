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
	"context"
	"os"
	"testing"

	"github.com/openvpa/openvpa/pkg/component/componenttest"
)

func TestMain(m *testing.M) {
	componenttest.Main(m, func(ctx context.Context, args []string) int {
		return NewCommand().Execute(ctx, args, os.Stdout, os.Stderr)
	})
}

// TestStartupFailures: the error the recommender exits on is JSON with
// --logging-format=json, and "vpa-recommender: <error>" in the text format.
func TestStartupFailures(t *testing.T) {
	componenttest.CheckFailures(t, Name, map[string]componenttest.Failure{
		"json, missing kubeconfig": {JSON: true, Args: []string{"--kubeconfig=/nonexistent"}, WantErr: "stat /nonexistent"},
		"json, invalid flag value": {JSON: true, Args: []string{"--recommender-interval=0s", "--shards=-1"}, WantErr: "--recommender-interval must be positive"},
		"json, unknown flag":       {JSON: true, Args: []string{"--nope"}, WantErr: "unknown flag: --nope"},
		"text, missing kubeconfig": {Args: []string{"--kubeconfig=/nonexistent"}, WantErr: "loading the API client configuration: stat /nonexistent"},
		"text, invalid flag value": {Args: []string{"--storage=disk"}, WantErr: `--storage must be "checkpoint" or "prometheus", got "disk"`},
	})
}

// TestKlogFileFlags: upstream's klog flags, --log-file among them, are taken
// and write the recommender's log to the file.
func TestKlogFileFlags(t *testing.T) {
	config := componenttest.Kubeconfig(t, t.TempDir())
	componenttest.CheckLogFile(t, Name, "listening on :-1", "--kubeconfig="+config, "--address=:-1")
}

// TestVersion: --version prints the binary's name and version and exits 0.
func TestVersion(t *testing.T) {
	componenttest.CheckVersion(t, Name)
}
