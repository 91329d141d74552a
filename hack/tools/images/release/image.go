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
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The OCI annotation keys every image, manifest and index carries as labels
// or annotations.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelLicenses = "org.opencontainers.image.licenses"
	LabelCreated  = "org.opencontainers.image.created"
	LabelTitle    = "org.opencontainers.image.title"
)

// Platform is an operating system and architecture a binary is built for.
type Platform struct {
	OS, Arch string
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ImagePlatforms are the platforms of every component image.
var ImagePlatforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}}

// Meta is what every artifact of a release records about where it comes from.
type Meta struct {
	// Version is the release, e.g. v1.2.3.
	Version string
	// Commit is the full commit hash the release is built from.
	Commit string
	// Source is the repository's URL.
	Source string
	// Created is the commit's date (SOURCE_DATE_EPOCH): every timestamp of
	// every artifact.
	Created time.Time
}

// Labels are the OCI labels of an image of m, titled title.
func (m Meta) Labels(title string) map[string]string {
	return map[string]string{
		LabelSource:   m.Source,
		LabelVersion:  m.Version,
		LabelRevision: m.Commit,
		LabelLicenses: "Apache-2.0",
		LabelCreated:  m.Created.UTC().Format(time.RFC3339),
		LabelTitle:    title,
	}
}

// ImageSpec is one component's multi-platform image.
type ImageSpec struct {
	// Name is the image's name and the binary's, e.g. vpa-recommender; the
	// binary is /<Name>, the entrypoint.
	Name string
	// Binaries holds the static binary's path on this machine per platform.
	Binaries map[Platform]string
	// CABundle is the PEM file written to CABundlePath.
	CABundle []byte
}

// BuildIndex returns spec's image index: one image per platform of
// ImagePlatforms, each a base layer (passwd, group, CA bundle, /tmp) and a
// layer with the binary, running as nobody, every timestamp meta.Created.
func BuildIndex(spec ImageSpec, meta Meta) (v1.ImageIndex, error) {
	base, err := tarOf(baseFiles(spec.CABundle), meta.Created)
	if err != nil {
		return nil, err
	}
	labels := meta.Labels(spec.Name)
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range ImagePlatforms {
		path, ok := spec.Binaries[p]
		if !ok {
			return nil, fmt.Errorf("%s: no binary for %s", spec.Name, p)
		}
		bin, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s for %s: %w", spec.Name, p, err)
		}
		binTar, err := tarOf([]file{{name: spec.Name, mode: 0o755, data: bin}}, meta.Created)
		if err != nil {
			return nil, err
		}
		img, err := image(spec.Name, p, meta, labels, base, binTar)
		if err != nil {
			return nil, fmt.Errorf("%s for %s: %w", spec.Name, p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}},
		})
	}
	out, ok := mutate.Annotations(idx, labels).(v1.ImageIndex)
	if !ok {
		return nil, fmt.Errorf("%s: annotating the index", spec.Name)
	}
	return out, nil
}

func layerOf(b []byte) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}

func image(name string, p Platform, meta Meta, labels map[string]string, base, binTar []byte) (v1.Image, error) {
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	created := v1.Time{Time: meta.Created.UTC()}
	for _, l := range []struct {
		tar []byte
		by  string
	}{
		{base, "openvpa release: /etc/passwd, /etc/group, " + CABundlePath + ", /tmp"},
		{binTar, "openvpa release: /" + name},
	} {
		layer, err := layerOf(l.tar)
		if err != nil {
			return nil, err
		}
		img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{Created: created, CreatedBy: l.by}})
		if err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = created
	cf.OS, cf.Architecture = p.OS, p.Arch
	cf.Config = v1.Config{
		Entrypoint: []string{"/" + name},
		User:       User,
		WorkingDir: "/",
		Env:        []string{"SSL_CERT_FILE=" + CABundlePath},
		Labels:     labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	annotated, ok := mutate.Annotations(img, labels).(v1.Image)
	if !ok {
		return nil, fmt.Errorf("annotating the image")
	}
	return annotated, nil
}

// Platforms lists the platforms of idx's manifests, as os/arch.
func Platforms(idx v1.ImageIndex) ([]string, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			return nil, fmt.Errorf("manifest %s has no platform", d.Digest)
		}
		out = append(out, d.Platform.OS+"/"+d.Platform.Architecture)
	}
	return out, nil
}

// ImageRepo is the repository of component name under registry.
func ImageRepo(registry, name string) string { return strings.TrimSuffix(registry, "/") + "/" + name }
