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

// Package ociimage makes single-binary container images: an empty base plus one
// layer holding a static binary, written as an OCI image layout tarball that
// `ctr images import` (containerd) reads.
//
// The output is a function of the binary and the Spec alone: every timestamp is
// fixed and the tar entries are written in a fixed order, so the same binary
// gives the same digests on every machine.
package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Epoch is the creation time of every image, layer entry and history record.
var Epoch = time.Unix(0, 0).UTC()

// formatRevision is part of every image's input key: bump it when this
// package changes what it writes, so WriteFile does not keep stale tarballs.
const formatRevision = "1"

// Annotations on the manifest descriptor in index.json. containerd names the
// imported image after AnnotationImageName; other OCI tools read the ref name.
const (
	AnnotationImageName = "io.containerd.image.name"
	AnnotationRefName   = "org.opencontainers.image.ref.name"
)

// Spec says what one image holds.
type Spec struct {
	// Ref is the full image reference, e.g. ghcr.io/openvpa/vpa-recommender:local.
	Ref string
	// Binary is the path of the static binary on this machine.
	Binary string
	// Path is where the binary lives in the image, absolute, e.g. /vpa-recommender.
	// It is the image's entrypoint.
	Path string
	// User is the image's user, "UID" or "UID:GID".
	User string
}

func (s Spec) validate() error {
	if _, err := name.NewTag(s.Ref, name.StrictValidation); err != nil {
		return fmt.Errorf("image reference %q: want REGISTRY/REPOSITORY:TAG: %w", s.Ref, err)
	}
	switch {
	case !path.IsAbs(s.Path) || path.Clean(s.Path) != s.Path || s.Path == "/":
		return fmt.Errorf("binary path in image %q: want a clean absolute file path", s.Path)
	case s.Binary == "":
		return errors.New("no binary given")
	case s.User == "":
		return errors.New("no user given")
	}
	return nil
}

// Result describes a written image.
type Result struct {
	// Digest is the manifest digest: what containerd lists after the import.
	Digest v1.Hash
	// UpToDate is true when WriteFile found the tarball already made from the
	// same inputs and left it alone.
	UpToDate bool
}

// Build returns the image for spec: the binary at spec.Path, mode 0755, owned
// by root, as the only layer; the binary as entrypoint; linux/amd64; no
// environment.
func Build(spec Spec) (v1.Image, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	bin, err := os.ReadFile(spec.Binary)
	if err != nil {
		return nil, err
	}
	layerTar, err := singleFileTar(strings.TrimPrefix(spec.Path, "/"), bin)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("layer of %s: %w", spec.Binary, err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: Epoch},
			CreatedBy: "openvpa hack/tools/images: " + spec.Path,
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: Epoch}
	cf.OS = "linux"
	cf.Architecture = "amd64"
	cf.Config = v1.Config{
		Entrypoint: []string{spec.Path},
		User:       spec.User,
		WorkingDir: "/",
	}
	return mutate.ConfigFile(img, cf)
}

// singleFileTar is a tar stream with one regular file, as a layer holds it.
func singleFileTar(name string, content []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Mode:     0o755,
		Size:     int64(len(content)),
		ModTime:  Epoch,
		Format:   tar.FormatUSTAR,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(content); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write writes img as an OCI image layout tarball (oci-layout, index.json,
// blobs/sha256/...) naming it ref, and returns the manifest digest.
func Write(w io.Writer, ref string, img v1.Image) (v1.Hash, error) {
	manifest, err := img.RawManifest()
	if err != nil {
		return v1.Hash{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	mediaType, err := img.MediaType()
	if err != nil {
		return v1.Hash{}, err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return v1.Hash{}, err
	}
	configName, err := img.ConfigName()
	if err != nil {
		return v1.Hash{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return v1.Hash{}, err
	}
	index := v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: mediaType,
			Size:      int64(len(manifest)),
			Digest:    digest,
			Platform:  &v1.Platform{OS: cf.OS, Architecture: cf.Architecture},
			Annotations: map[string]string{
				AnnotationImageName: ref,
				AnnotationRefName:   ref,
			},
		}},
	}
	indexJSON, err := json.Marshal(index)
	if err != nil {
		return v1.Hash{}, err
	}

	tw := tar.NewWriter(w)
	file := func(name string, size int64, r io.Reader) error {
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size, ModTime: Epoch, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		n, err := io.Copy(tw, r)
		if err == nil && n != size {
			err = fmt.Errorf("%s: wrote %d bytes, want %d", name, n, size)
		}
		return err
	}
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: Epoch, Format: tar.FormatUSTAR})
	}
	blob := func(h v1.Hash, size int64, r io.Reader) error {
		return file("blobs/"+h.Algorithm+"/"+h.Hex, size, r)
	}
	bytesBlob := func(h v1.Hash, b []byte) error { return blob(h, int64(len(b)), bytes.NewReader(b)) }

	layout := []byte(`{"imageLayoutVersion":"1.0.0"}`)
	if err := file("oci-layout", int64(len(layout)), bytes.NewReader(layout)); err != nil {
		return v1.Hash{}, err
	}
	if err := file("index.json", int64(len(indexJSON)), bytes.NewReader(indexJSON)); err != nil {
		return v1.Hash{}, err
	}
	if err := dir("blobs/"); err != nil {
		return v1.Hash{}, err
	}
	if err := dir("blobs/sha256/"); err != nil {
		return v1.Hash{}, err
	}
	if err := bytesBlob(digest, manifest); err != nil {
		return v1.Hash{}, err
	}
	if err := bytesBlob(configName, config); err != nil {
		return v1.Hash{}, err
	}
	layers, err := img.Layers()
	if err != nil {
		return v1.Hash{}, err
	}
	for _, l := range layers {
		h, err := l.Digest()
		if err != nil {
			return v1.Hash{}, err
		}
		size, err := l.Size()
		if err != nil {
			return v1.Hash{}, err
		}
		rc, err := l.Compressed()
		if err != nil {
			return v1.Hash{}, err
		}
		err = blob(h, size, rc)
		rc.Close()
		if err != nil {
			return v1.Hash{}, err
		}
	}
	return digest, tw.Close()
}

// WriteFile builds spec's image into the tarball at file, unless file was
// already written from the same inputs (the binary's content and the spec),
// which a key file beside it (file + ".inputs") records.
func WriteFile(file string, spec Spec) (Result, error) {
	key, err := inputKey(spec)
	if err != nil {
		return Result{}, err
	}
	keyFile := file + ".inputs"
	if old, err := os.ReadFile(keyFile); err == nil {
		var rec inputRecord
		if json.Unmarshal(old, &rec) == nil && rec.Key == key {
			if _, err := os.Stat(file); err == nil {
				d, err := v1.NewHash(rec.Digest)
				if err == nil {
					return Result{Digest: d, UpToDate: true}, nil
				}
			}
		}
	}
	img, err := Build(spec)
	if err != nil {
		return Result{}, err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return Result{}, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), filepath.Base(file)+".tmp*")
	if err != nil {
		return Result{}, err
	}
	defer os.Remove(tmp.Name())
	digest, err := Write(tmp, spec.Ref, img)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Result{}, fmt.Errorf("writing %s: %w", file, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return Result{}, err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return Result{}, err
	}
	rec, err := json.Marshal(inputRecord{Key: key, Digest: digest.String()})
	if err != nil {
		return Result{}, err
	}
	if err := os.WriteFile(keyFile, append(rec, '\n'), 0o644); err != nil {
		return Result{}, err
	}
	return Result{Digest: digest}, nil
}

type inputRecord struct {
	Key    string `json:"key"`
	Digest string `json:"digest"`
}

// inputKey hashes everything the tarball is made from.
func inputKey(spec Spec) (string, error) {
	f, err := os.Open(spec.Binary)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", formatRevision, spec.Ref, spec.Path, spec.User)
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
