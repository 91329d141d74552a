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

package releasechart

import (
	"bytes"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..")
}

func TestPackageIsReproducibleAndSetsTheRelease(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "deploy", "charts", ChartName)
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	a, err := Package(dir, "v1.2.3-rc.1", "registry.example.com/openvpa", at)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Package(dir, "v1.2.3-rc.1", "registry.example.com/openvpa", at)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("two packages of the same chart differ")
	}
	c, err := loader.LoadArchive(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if c.Metadata.Version != "1.2.3-rc.1" || c.Metadata.AppVersion != "v1.2.3-rc.1" {
		t.Errorf("version %q appVersion %q", c.Metadata.Version, c.Metadata.AppVersion)
	}
	for img, key := range ImageValues {
		image := c.Values[key].(map[string]any)["image"].(map[string]any)
		if image["repository"] != "registry.example.com/openvpa/"+img || image["tag"] != "v1.2.3-rc.1" {
			t.Errorf("%s.image = %v", key, image)
		}
	}
	if len(c.Templates) == 0 {
		t.Error("the package has no templates")
	}
}

func TestReadImagesAndRender(t *testing.T) {
	d := "sha256:" + strings.Repeat("a", 64)
	txt := "127.0.0.1:5000/openvpa/vpa-recommender:v1.2.3@" + d + "\n" +
		"127.0.0.1:5000/openvpa/vpa-updater:v1.2.3@" + d + "\n" +
		"127.0.0.1:5000/openvpa/vpa-admission-controller:v1.2.3@" + d + "\n"
	images, err := ReadImages([]byte(txt))
	if err != nil {
		t.Fatal(err)
	}
	if got := images["vpa-updater"]; got != "127.0.0.1:5000/openvpa/vpa-updater@"+d {
		t.Errorf("vpa-updater: %q", got)
	}
	out, err := Render(filepath.Join(repoRoot(t), "deploy"), images)
	if err != nil {
		t.Fatal(err)
	}
	for img := range ImageValues {
		if want := "image: 127.0.0.1:5000/openvpa/" + img + "@" + d; !strings.Contains(string(out), want) {
			t.Errorf("the manifest lacks %q", want)
		}
	}
	if strings.Contains(string(out), "ghcr.io/openvpa/") {
		t.Error("the manifest still names ghcr.io/openvpa images")
	}
	if !strings.Contains(string(out), "kind: CustomResourceDefinition") {
		t.Error("the manifest lacks the CRDs")
	}
	if _, err := ReadImages([]byte("no-digest:v1\n")); err == nil {
		t.Error("a line without a digest was accepted")
	}
}
