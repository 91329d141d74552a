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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Components are the three binaries released as images, by folder.
var Components = []string{"recommender", "updater", "admission-controller"}

// Builder builds the Go package pkg (a folder of the repository, e.g.
// ./recommender) for platform p into the file out.
type Builder interface {
	Build(ctx context.Context, pkg string, p Platform, out string) error
}

// Options are the inputs of a release.
type Options struct {
	Meta
	// Registry is host[:port]/path, where the images go as
	// Registry/vpa-<component>:Version.
	Registry string
	// RepoRoot is the repository's folder: LICENSE and CHANGELOG.md are read there.
	RepoRoot string
	// Out is the release's folder, e.g. _output/release/v1.2.3; Run empties it first.
	Out string
	// DownloadURL is where the plugin archives are published, the base of the
	// krew manifest's URIs.
	DownloadURL string
	// Push sends the images to Registry; without it they are only written to Out.
	Push bool
	// PlainHTTP talks to Registry over http (a registry on loopback).
	PlainHTTP bool
	// Builder makes the binaries.
	Builder Builder
	// CABundle is the images' CA bundle; nil takes CABundle().
	CABundle []byte
}

// Manifest is release.json: what a release made.
type Manifest struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	// Created is the commit's date, every artifact's timestamp (RFC 3339).
	Created string  `json:"created"`
	Images  []Image `json:"images"`
	// Chart is filled in by the chart step (hack/tools/helm/cmd/releasechart).
	Chart   *Chart    `json:"chart,omitempty"`
	Plugin  []Archive `json:"plugin"`
	Krew    string    `json:"krew"`
	Notes   string    `json:"notes"`
	Install string    `json:"install,omitempty"`
}

// Image is one pushed (or written) image index.
type Image struct {
	Name       string   `json:"name"`
	Repository string   `json:"repository"`
	Tag        string   `json:"tag"`
	Digest     string   `json:"digest"`
	Platforms  []string `json:"platforms"`
	Pushed     bool     `json:"pushed"`
}

// Ref is the image's reference by tag and digest.
func (i Image) Ref() string { return i.Repository + ":" + i.Tag + "@" + i.Digest }

// Chart is the packaged chart, as the chart step records it.
type Chart struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
	File      string `json:"file"`
	SHA256    string `json:"sha256"`
	Pushed    bool   `json:"pushed"`
}

// File names in Out.
const (
	ManifestFile  = "release.json"
	ImagesFile    = "images.txt"
	LayoutDir     = "oci"
	SumsFile      = "SHA256SUMS"
	KrewFile      = "vpa.yaml"
	NotesFile     = "release-notes.md"
	binariesDir   = "bin"
	ChangelogFile = "CHANGELOG.md"
)

func (o *Options) validate() error {
	var errs []error
	if err := ValidateVersion(o.Version); err != nil {
		errs = append(errs, err)
	}
	if err := ValidateRegistry(o.Registry); err != nil {
		errs = append(errs, err)
	}
	if o.Commit == "" {
		errs = append(errs, errors.New("no commit given"))
	}
	if o.Created.IsZero() {
		errs = append(errs, errors.New("no creation time given (SOURCE_DATE_EPOCH)"))
	}
	if o.Out == "" || o.RepoRoot == "" || o.Builder == nil {
		errs = append(errs, errors.New("out folder, repository root and builder are required"))
	}
	return errors.Join(errs...)
}

// Run builds the release: the binaries, one image index per component
// (written to Out/oci and, with Push, pushed), the plugin archives with
// SHA256SUMS and the krew manifest, the release notes from CHANGELOG.md,
// images.txt and release.json.
func Run(ctx context.Context, o Options) (*Manifest, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	changelog, err := os.ReadFile(filepath.Join(o.RepoRoot, ChangelogFile))
	if err != nil {
		return nil, fmt.Errorf("release notes: %w", err)
	}
	notes, err := ChangelogSection(string(changelog), o.Version)
	if err != nil {
		return nil, err
	}
	license, err := os.ReadFile(filepath.Join(o.RepoRoot, "LICENSE"))
	if err != nil {
		return nil, err
	}
	if o.CABundle == nil {
		o.CABundle = CABundle()
	}
	if err := os.RemoveAll(o.Out); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	m := &Manifest{Version: o.Version, Commit: o.Commit, Created: o.Meta.Labels("")[LabelCreated], Krew: KrewFile, Notes: NotesFile}
	if err := writeFile(o.Out, NotesFile, []byte(notes)); err != nil {
		return nil, err
	}

	images, err := o.images(ctx)
	if err != nil {
		return nil, err
	}
	m.Images = images
	var list strings.Builder
	for _, img := range images {
		list.WriteString(img.Ref() + "\n")
	}
	if err := writeFile(o.Out, ImagesFile, []byte(list.String())); err != nil {
		return nil, err
	}

	if m.Plugin, err = o.plugin(ctx, license); err != nil {
		return nil, err
	}
	sums := map[string]string{}
	for _, a := range m.Plugin {
		sums[a.Name] = a.SHA256
	}
	if err := writeFile(o.Out, SumsFile, SHA256Sums(sums)); err != nil {
		return nil, err
	}
	krew, err := KrewManifest(o.Version, o.Source, o.DownloadURL, m.Plugin)
	if err != nil {
		return nil, err
	}
	if err := writeFile(o.Out, KrewFile, krew); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(filepath.Join(o.Out, binariesDir)); err != nil {
		return nil, err
	}
	return m, WriteManifest(o.Out, m)
}

// WriteManifest writes m as Out/release.json.
func WriteManifest(out string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(out, ManifestFile, append(b, '\n'))
}

// ReadManifest reads Out/release.json.
func ReadManifest(out string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(out, ManifestFile))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	return &m, nil
}

func writeFile(dir, name string, b []byte) error {
	return os.WriteFile(filepath.Join(dir, name), b, 0o644)
}

// images builds, writes and pushes the component images.
func (o *Options) images(ctx context.Context) ([]Image, error) {
	lp, err := layout.Write(filepath.Join(o.Out, LayoutDir), empty.Index)
	if err != nil {
		return nil, err
	}
	var out []Image
	for _, c := range Components {
		imgName := "vpa-" + c
		spec := ImageSpec{Name: imgName, Binaries: map[Platform]string{}, CABundle: o.CABundle}
		for _, p := range ImagePlatforms {
			bin := filepath.Join(o.Out, binariesDir, p.OS+"-"+p.Arch, imgName)
			if err := o.Builder.Build(ctx, "./"+c, p, bin); err != nil {
				return nil, fmt.Errorf("building %s for %s: %w", imgName, p, err)
			}
			spec.Binaries[p] = bin
		}
		idx, err := BuildIndex(spec, o.Meta)
		if err != nil {
			return nil, err
		}
		digest, err := idx.Digest()
		if err != nil {
			return nil, err
		}
		platforms, err := Platforms(idx)
		if err != nil {
			return nil, err
		}
		img := Image{Name: imgName, Repository: ImageRepo(o.Registry, imgName), Tag: o.Version, Digest: digest.String(), Platforms: platforms}
		ref := img.Repository + ":" + img.Tag
		if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
			"org.opencontainers.image.ref.name": ref,
		})); err != nil {
			return nil, fmt.Errorf("writing %s: %w", imgName, err)
		}
		if o.Push {
			if err := o.push(ctx, ref, idx); err != nil {
				return nil, err
			}
			img.Pushed = true
		}
		out = append(out, img)
	}
	return out, nil
}

func (o *Options) push(ctx context.Context, ref string, idx v1.ImageIndex) error {
	var opts []name.Option
	if o.PlainHTTP {
		opts = append(opts, name.Insecure)
	}
	tag, err := name.NewTag(ref, opts...)
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(tag, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	return nil
}

// plugin builds the plugin for every platform and writes its archives.
func (o *Options) plugin(ctx context.Context, license []byte) ([]Archive, error) {
	var out []Archive
	for _, p := range PluginPlatforms {
		bin := filepath.Join(o.Out, binariesDir, p.OS+"-"+p.Arch, PluginBinary(p))
		if err := o.Builder.Build(ctx, "./kubectl-vpa", p, bin); err != nil {
			return nil, fmt.Errorf("building kubectl-vpa for %s: %w", p, err)
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			return nil, err
		}
		archive, err := PluginArchive(p, b, license, o.Created)
		if err != nil {
			return nil, err
		}
		a := Archive{Platform: p, Name: PluginArchiveName(o.Version, p), OS: p.OS, Arch: p.Arch, SHA256: SHA256Hex(archive)}
		if err := writeFile(o.Out, a.Name, archive); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b Archive) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ChartFile is what the chart step writes for Finalize; InstallFile is the
// rendered install manifest.
const (
	ChartFile   = "chart.json"
	InstallFile = "openvpa.yaml"
)

// Finalize adds the chart step's chart.json and the install manifest to
// Out/release.json.
func Finalize(out string) error {
	m, err := ReadManifest(out)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(out, ChartFile))
	if err != nil {
		return fmt.Errorf("the chart step's output: %w", err)
	}
	var c Chart
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("%s: %w", ChartFile, err)
	}
	if _, err := os.Stat(filepath.Join(out, InstallFile)); err != nil {
		return fmt.Errorf("the install manifest: %w", err)
	}
	m.Chart, m.Install = &c, InstallFile
	return WriteManifest(out, m)
}
