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

// Command release builds an OpenVPA release into a folder and pushes its
// images (see docs/release.md; `make release` runs it):
//
//	go run ./cmd/release --repo=ROOT --version=v1.2.3 --registry=ghcr.io/openvpa \
//	    --commit=SHA --source-date-epoch=SECONDS --out=ROOT/_output/release/v1.2.3
//
// With --finalize it only completes release.json with chart.json, which the
// chart step (hack/tools/helm/cmd/releasechart) writes.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/openvpa/openvpa/hack/tools/images/release"
)

type options struct {
	release.Options
	epoch      string
	allowDirty bool
	finalize   bool
}

func main() {
	var o options
	flag.StringVar(&o.RepoRoot, "repo", ".", "the repository's folder")
	flag.StringVar(&o.Version, "version", "", "the release version, e.g. v1.2.3")
	flag.StringVar(&o.Registry, "registry", "", "host[:port]/path the images are pushed under")
	flag.StringVar(&o.Commit, "commit", "", "the commit released")
	flag.StringVar(&o.epoch, "source-date-epoch", "", "the commit's date in seconds since 1970: every timestamp of the release")
	flag.StringVar(&o.Source, "source", "https://github.com/openvpa/openvpa", "the repository's URL (org.opencontainers.image.source)")
	flag.StringVar(&o.DownloadURL, "download-url", "", "where the plugin archives are published (default https://github.com/openvpa/openvpa/releases/download/VERSION)")
	flag.StringVar(&o.Out, "out", "", "the release's folder (default REPO/_output/release/VERSION)")
	flag.BoolVar(&o.Push, "push", true, "push the images to the registry")
	flag.BoolVar(&o.PlainHTTP, "plain-http", false, "talk to the registry over http")
	flag.BoolVar(&o.allowDirty, "allow-dirty", false, "release a working tree with uncommitted changes")
	flag.BoolVar(&o.finalize, "finalize", false, "only add chart.json and the install manifest to release.json")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if err := release.ValidateVersion(o.Version); err != nil {
		return err
	}
	if o.Out == "" {
		o.Out = o.RepoRoot + "/_output/release/" + o.Version
	}
	if o.finalize {
		return release.Finalize(o.Out)
	}
	if err := release.ValidateRegistry(o.Registry); err != nil {
		return err
	}
	if !o.allowDirty {
		status, err := release.GitStatus(ctx, o.RepoRoot)
		if err != nil {
			return err
		}
		if err := release.CheckClean(status); err != nil {
			return err
		}
	}
	secs, err := strconv.ParseInt(o.epoch, 10, 64)
	if err != nil {
		return fmt.Errorf("--source-date-epoch %q: want seconds since 1970", o.epoch)
	}
	o.Created = time.Unix(secs, 0).UTC()
	if o.DownloadURL == "" {
		o.DownloadURL = "https://github.com/openvpa/openvpa/releases/download/" + o.Version
	}
	o.Builder = release.GoBuilder{RepoRoot: o.RepoRoot, Meta: o.Meta}
	m, err := release.Run(ctx, o.Options)
	if err != nil {
		return err
	}
	for _, img := range m.Images {
		state := "wrote"
		if img.Pushed {
			state = "pushed"
		}
		fmt.Printf("%-6s %s %v\n", state, img.Ref(), img.Platforms)
	}
	fmt.Printf("wrote  %s\n", o.Out)
	return nil
}
