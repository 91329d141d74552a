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

// Command releasechart is the chart step of a release (`make release`, see
// docs/release.md): it packages deploy/charts/vertical-pod-autoscaler for the
// release, pushes it to the registry as an OCI artifact, renders deploy/ with
// the release's images (from images.txt) into openvpa.yaml, and writes
// chart.json for release.json.
//
//	go run ./cmd/releasechart --repo=ROOT --version=v1.2.3 --registry=ghcr.io/openvpa \
//	    --source-date-epoch=SECONDS --out=ROOT/_output/release/v1.2.3
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/openvpa/openvpa/hack/tools/helm/releasechart"
)

type options struct {
	repo, version, registry, epoch, out string
	push, plainHTTP                     bool
}

// chartRecord is chart.json (the images module's release.Chart).
type chartRecord struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
	File      string `json:"file"`
	SHA256    string `json:"sha256"`
	Pushed    bool   `json:"pushed"`
}

func main() {
	var o options
	flag.StringVar(&o.repo, "repo", ".", "the repository's folder")
	flag.StringVar(&o.version, "version", "", "the release version, e.g. v1.2.3")
	flag.StringVar(&o.registry, "registry", "", "host[:port]/path the chart is pushed under")
	flag.StringVar(&o.epoch, "source-date-epoch", "", "the commit's date in seconds since 1970")
	flag.StringVar(&o.out, "out", "", "the release's folder, with images.txt (default REPO/_output/release/VERSION)")
	flag.BoolVar(&o.push, "push", true, "push the chart to the registry")
	flag.BoolVar(&o.plainHTTP, "plain-http", false, "talk to the registry over http")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "releasechart:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.version == "" || o.registry == "" {
		return fmt.Errorf("--version and --registry are required")
	}
	secs, err := strconv.ParseInt(o.epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("--source-date-epoch %q: want seconds since 1970", o.epoch)
	}
	created := time.Unix(secs, 0).UTC()
	if o.out == "" {
		o.out = filepath.Join(o.repo, "_output", "release", o.version)
	}
	tgz, err := releasechart.Package(filepath.Join(o.repo, "deploy", "charts", releasechart.ChartName), o.version, o.registry, created)
	if err != nil {
		return err
	}
	rec := chartRecord{
		Name:    releasechart.ChartName,
		Version: releasechart.ChartVersion(o.version),
		File:    releasechart.ChartName + "-" + releasechart.ChartVersion(o.version) + ".tgz",
	}
	sum := sha256.Sum256(tgz)
	rec.SHA256 = hex.EncodeToString(sum[:])
	rec.Reference = "oci://" + o.registry + "/" + rec.Name
	if err := os.WriteFile(filepath.Join(o.out, rec.File), tgz, 0o644); err != nil {
		return err
	}
	if o.push {
		ref, digest, err := releasechart.Push(tgz, releasechart.PushOptions{Registry: o.registry, PlainHTTP: o.plainHTTP, Created: created})
		if err != nil {
			return err
		}
		rec.Digest, rec.Pushed = digest, true
		fmt.Printf("pushed oci://%s@%s\n", ref, digest)
	}
	imagesTxt, err := os.ReadFile(filepath.Join(o.out, "images.txt"))
	if err != nil {
		return err
	}
	images, err := releasechart.ReadImages(imagesTxt)
	if err != nil {
		return err
	}
	manifest, err := releasechart.Render(filepath.Join(o.repo, "deploy"), images)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(o.out, "openvpa.yaml"), manifest, 0o644); err != nil {
		return err
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	fmt.Printf("wrote  %s, openvpa.yaml\n", rec.File)
	return os.WriteFile(filepath.Join(o.out, "chart.json"), append(b, '\n'), 0o644)
}
