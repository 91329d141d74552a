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

package pod

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"

	"github.com/openvpa/openvpa/pkg/annotations"
)

func TestNativeSidecarsArePatchedWithTheGate(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := testPod(nil, ctr("app", rl("100m", "100Mi"), rl("200m", "")))
	proxy := ctr("proxy", rl("10m", "10Mi"), rl("20m", ""))
	proxy.RestartPolicy = &always
	pod.Spec.InitContainers = []corev1.Container{ctr("setup", rl("1", ""), nil), proxy}
	vpa := testVPA(rec("app", rl("300m", "200Mi")), rec("proxy", rl("50m", "32Mi")), rec("setup", rl("5", "")))
	input, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	admit := func(h *Handler) *corev1.Pod {
		t.Helper()
		res, err := h.AdmitJSON(context.Background(), input, "ns", nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := jsonpatch.DecodePatch(res.Patch)
		if err != nil {
			t.Fatal(err)
		}
		patched, err := p.Apply(input)
		if err != nil {
			t.Fatalf("%v\n%s", err, res.Patch)
		}
		var out corev1.Pod
		if err := json.Unmarshal(patched, &out); err != nil {
			t.Fatal(err)
		}
		return &out
	}

	on := admit(NewHandler(fakeFinder{vpa: vpa}, fakeLimits{}).WithNativeSidecars())
	if got := on.Spec.Containers[0].Resources.Requests; !sameList(got, rl("300m", "200Mi")) {
		t.Errorf("app requests %v", got)
	}
	side := on.Spec.InitContainers[1].Resources
	if !sameList(side.Requests, rl("50m", "32Mi")) || !sameList(side.Limits, rl("100m", "")) {
		t.Errorf("sidecar resources %v, want the recommendation with a proportional limit", side)
	}
	if got := on.Spec.InitContainers[0].Resources.Requests; !sameList(got, rl("1", "")) {
		t.Errorf("a regular init container was patched: %v", got)
	}
	if got := on.Annotations[annotations.ObservedContainers]; got != "app, proxy" {
		t.Errorf("%s = %q, want the sidecar observed", annotations.ObservedContainers, got)
	}
	if got := on.Annotations[annotations.Updates]; !strings.Contains(got, "init container 1: cpu request, memory request, cpu limit") {
		t.Errorf("%s = %q", annotations.Updates, got)
	}
	orig, ok, err := annotations.OriginalOf(on)
	if err != nil || !ok || !sameList(orig["proxy"].Requests, rl("10m", "10Mi")) {
		t.Errorf("original resources %v %v %v", orig, ok, err)
	}

	off := admit(NewHandler(fakeFinder{vpa: vpa}, fakeLimits{}))
	if got := off.Spec.InitContainers[1].Resources.Requests; !sameList(got, rl("10m", "10Mi")) {
		t.Errorf("the sidecar was patched without the gate: %v", got)
	}
	if got := off.Annotations[annotations.ObservedContainers]; got != "app" {
		t.Errorf("%s = %q without the gate", annotations.ObservedContainers, got)
	}
}
