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

package limitrange

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rl(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func lr(items ...corev1.LimitRangeItem) *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr"}, Spec: corev1.LimitRangeSpec{Limits: items}}
}

func ctr(name string, req, lim corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
}

func podOf(cs ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: cs}}
}

func TestValidate(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	podMax := corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "400m", "memory", "1Gi")}
	tests := map[string]struct {
		pod    *corev1.Pod
		ranges []*corev1.LimitRange
		want   []string // messages, in order; none means admitted
	}{
		"pod max exceeded by the sum of limits": {
			// The case of issue 23: one container raised, the other left alone.
			pod: podOf(ctr("hamster0", rl("cpu", "400m", "memory", "600Mi"), rl("cpu", "400m", "memory", "600Mi")),
				ctr("hamster1", rl("cpu", "200m", "memory", "512Mi"), rl("cpu", "200m", "memory", "512Mi"))),
			ranges: []*corev1.LimitRange{lr(podMax)},
			want:   []string{"maximum cpu usage per Pod is 400m, but limit is 600m", "maximum memory usage per Pod is 1Gi, but limit is 1112Mi"},
		},
		"pod max met exactly": {
			pod: podOf(ctr("a", rl("cpu", "200m", "memory", "512Mi"), rl("cpu", "200m", "memory", "512Mi")),
				ctr("b", rl("cpu", "200m", "memory", "512Mi"), rl("cpu", "200m", "memory", "512Mi"))),
			ranges: []*corev1.LimitRange{lr(podMax)},
		},
		"pod max needs a limit somewhere": {
			pod:    podOf(ctr("a", rl("cpu", "100m"), nil)),
			ranges: []*corev1.LimitRange{lr(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "1")})},
			want:   []string{"maximum cpu usage per Pod is 1.  No limit is specified"},
		},
		"container min on request and limit": {
			pod:    podOf(ctr("a", rl("memory", "10Mi"), rl("memory", "20Mi"))),
			ranges: []*corev1.LimitRange{lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("memory", "32Mi")})},
			want:   []string{"minimum memory usage per Container is 32Mi, but request is 10Mi"},
		},
		"container min without request": {
			pod:    podOf(ctr("a", nil, nil)),
			ranges: []*corev1.LimitRange{lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("cpu", "10m")})},
			want:   []string{"minimum cpu usage per Container is 10m.  No request is specified"},
		},
		"container max on the limit, then the request": {
			pod:    podOf(ctr("a", rl("cpu", "3"), rl("cpu", "1"))),
			ranges: []*corev1.LimitRange{lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("cpu", "2")})},
			want:   []string{"maximum cpu usage per Container is 2, but request is 3"},
		},
		"limit to request ratio": {
			pod:    podOf(ctr("a", rl("cpu", "100m"), rl("cpu", "500m"))),
			ranges: []*corev1.LimitRange{lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: rl("cpu", "2")})},
			want:   []string{"cpu max limit to request ratio per Container is 2, but provided ratio is 5.000000"},
		},
		"ratio needs a limit": {
			pod:    podOf(ctr("a", rl("cpu", "100m"), nil)),
			ranges: []*corev1.LimitRange{lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: rl("cpu", "2")})},
			want:   []string{"cpu max limit to request ratio per Container is 2, but no limit is specified or limit is 0"},
		},
		"init containers: the largest one counts, sidecars add": {
			pod: &corev1.Pod{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{
					ctr("init", rl("cpu", "900m"), rl("cpu", "900m")),
					{Name: "sidecar", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: rl("cpu", "100m"), Limits: rl("cpu", "100m")}},
				},
				Containers: []corev1.Container{ctr("a", rl("cpu", "300m"), rl("cpu", "300m"))},
			}},
			ranges: []*corev1.LimitRange{lr(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "800m")})},
			want:   []string{"maximum cpu usage per Pod is 800m, but limit is 900m"},
		},
		"pod-level resources replace the containers' totals": {
			pod: &corev1.Pod{Spec: corev1.PodSpec{
				Resources:  &corev1.ResourceRequirements{Requests: rl("cpu", "300m"), Limits: rl("cpu", "300m")},
				Containers: []corev1.Container{ctr("a", rl("cpu", "200m"), rl("cpu", "200m")), ctr("b", rl("cpu", "200m"), rl("cpu", "200m"))},
			}},
			ranges: []*corev1.LimitRange{lr(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "350m")})},
		},
		"several LimitRanges are each enforced": {
			pod: podOf(ctr("a", rl("cpu", "1"), rl("cpu", "1"))),
			ranges: []*corev1.LimitRange{
				lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("cpu", "2")}),
				lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("cpu", "500m")}),
			},
			want: []string{"maximum cpu usage per Container is 500m, but limit is 1"},
		},
		"huge values compare in whole units": {
			pod:    podOf(ctr("a", rl("memory", "4Ei"), rl("memory", "4Ei"))),
			ranges: []*corev1.LimitRange{lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: rl("memory", "1Ei")})},
			want:   []string{"maximum memory usage per Container is 1Ei, but limit is 4Ei"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := Validate(tc.pod, tc.ranges)
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("Validate:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	p := podOf(ctr("a", nil, nil), ctr("b", rl("cpu", "1"), rl("memory", "1Gi")))
	Default(p, []*corev1.LimitRange{
		lr(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, DefaultRequest: rl("cpu", "100m", "memory", "64Mi"), Default: rl("cpu", "2", "memory", "128Mi")},
			corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "10")}),
	})
	a, b := p.Spec.Containers[0].Resources, p.Spec.Containers[1].Resources
	if a.Requests.Cpu().String() != "100m" || a.Requests.Memory().String() != "64Mi" || a.Limits.Cpu().String() != "2" || a.Limits.Memory().String() != "128Mi" {
		t.Errorf("container a = %v", a)
	}
	// What a container sets is kept; only what is missing is filled in.
	if b.Requests.Cpu().String() != "1" || b.Requests.Memory().String() != "64Mi" || b.Limits.Cpu().String() != "2" || b.Limits.Memory().String() != "1Gi" {
		t.Errorf("container b = %v", b)
	}
}
