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

// Command images writes the container images of OpenVPA's real node as OCI
// image layout tarballs, one per image, for `ctr images import`
// (hack/images/import.sh):
//
//	ghcr.io/openvpa/vpa-recommender:local           bin/vpa-recommender
//	ghcr.io/openvpa/vpa-updater:local               bin/vpa-updater
//	ghcr.io/openvpa/vpa-admission-controller:local  bin/vpa-admission-controller
//	registry.k8s.io/pause:3.10.2                    the pod sandbox (./pause)
//	ghcr.io/openvpa/memhog:local                    the test workload (./memhog)
//
// Each is an empty base plus one layer with the static binary, linux/amd64.
// It also writes images.txt (reference, digest, tarball per line). A tarball
// already made from the same binary is kept as it is.
//
//	go run . --bin-dir=BIN --pause=PAUSE --memhog=MEMHOG --out=DIR
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openvpa/openvpa/hack/tools/images/ociimage"
)

// PauseRef is the sandbox image: the one Kubernetes v1.37.2 pins (kubeadm's
// PauseVersion) and containerd v2.4.2's built-in default, so containerd finds
// it whether or not its config names one.
const PauseRef = "registry.k8s.io/pause:3.10.2"

// The users the images run as: nobody for ours (as deploy/ sets runAsUser),
// 65535 for pause like the upstream pause image.
const (
	nobody    = "65534:65534"
	pauseUser = "65535:65535"
)

// components are the binaries `make build` puts in bin/.
var components = []string{"recommender", "updater", "admission-controller"}

type options struct {
	binDir, pause, memhog, out, tag, pauseRef string
}

// specs lists the images and the tarball (under out) each is written to.
func specs(o options) map[string]ociimage.Spec {
	s := map[string]ociimage.Spec{}
	for _, c := range components {
		name := "vpa-" + c
		s[name+".tar"] = ociimage.Spec{
			Ref:    "ghcr.io/openvpa/" + name + ":" + o.tag,
			Binary: filepath.Join(o.binDir, name),
			Path:   "/" + name,
			User:   nobody,
		}
	}
	s["pause.tar"] = ociimage.Spec{Ref: o.pauseRef, Binary: o.pause, Path: "/pause", User: pauseUser}
	s["memhog.tar"] = ociimage.Spec{Ref: "ghcr.io/openvpa/memhog:" + o.tag, Binary: o.memhog, Path: "/memhog", User: nobody}
	return s
}

func main() {
	var o options
	flag.StringVar(&o.binDir, "bin-dir", "bin", "folder with the component binaries vpa-recommender, vpa-updater and vpa-admission-controller (static, linux/amd64)")
	flag.StringVar(&o.pause, "pause", "", "the pause binary (static, linux/amd64)")
	flag.StringVar(&o.memhog, "memhog", "", "the memhog binary (static, linux/amd64)")
	flag.StringVar(&o.out, "out", "_output/images", "folder to write the tarballs and images.txt to")
	flag.StringVar(&o.tag, "tag", "local", "tag of the OpenVPA images")
	flag.StringVar(&o.pauseRef, "pause-ref", PauseRef, "reference of the sandbox image")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	if o.pause == "" || o.memhog == "" {
		return fmt.Errorf("--pause and --memhog are required")
	}
	all := specs(o)
	var list strings.Builder
	// In a fixed order, so images.txt is the same on every run.
	for _, f := range slices.Sorted(maps.Keys(all)) {
		spec := all[f]
		path := filepath.Join(o.out, f)
		res, err := ociimage.WriteFile(path, spec)
		if err != nil {
			return fmt.Errorf("%s: %w", spec.Ref, err)
		}
		state := "wrote"
		if res.UpToDate {
			state = "up to date"
		}
		fmt.Printf("%-11s %s %s %s\n", state, path, spec.Ref, res.Digest)
		fmt.Fprintf(&list, "%s %s %s\n", spec.Ref, res.Digest, f)
	}
	return os.WriteFile(filepath.Join(o.out, "images.txt"), []byte(list.String()), 0o644)
}
