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
	"archive/tar"
	"bytes"
	"encoding/pem"
	"time"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// CABundlePath is where the images keep the trusted roots, the first file Go's
// crypto/x509 reads on Linux.
const CABundlePath = "/etc/ssl/certs/ca-certificates.crt"

// The image user and group: nobody, as deploy/ runs the pods.
const (
	UserID = 65534
	User   = "65534:65534"
)

// CABundle returns the root certificates of the pinned
// golang.org/x/crypto/x509roots/fallback module as PEM, in the module's
// order, so one module version always gives the same file. Roots that carry
// a constraint a PEM file cannot express (a distrust-after date) are left out.
func CABundle() []byte {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
	}
	return b.Bytes()
}

// file is one entry of a tar stream.
type file struct {
	name string
	mode int64
	dir  bool
	data []byte
}

// baseFiles are the files of every component image's first layer: the
// user database with nobody and the CA bundle.
func baseFiles(caBundle []byte) []file {
	passwd := "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
	group := "root:x:0:\nnobody:x:65534:\n"
	return []file{
		{name: "etc/", dir: true, mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/ssl/", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/", dir: true, mode: 0o755},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: caBundle},
		{name: "tmp/", dir: true, mode: 0o1777},
	}
}

// tarOf writes files, in the order given, owned by root, all with mtime.
func tarOf(files []file, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: f.mode, ModTime: mtime, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(f.data))}
		if f.dir {
			hdr.Typeflag, hdr.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
