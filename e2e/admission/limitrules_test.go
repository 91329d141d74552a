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

package admission

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openvpa/openvpa/e2e/framework"
	"github.com/openvpa/openvpa/pkg/limitrange"
	"github.com/openvpa/openvpa/pkg/recommendation"
)

// TestLimitRangeRulesMatchAPIServer checks the restatement of the API
// server's rules that plans are checked with (pkg/limitrange, and requests
// above limits in recommendation.Admissible) against the API server itself:
// random pods under random LimitRanges are created as server-side dry runs,
// and the API server must admit exactly the pods the restatement admits and
// refuse the others with the same messages.
func TestLimitRangeRulesMatchAPIServer(t *testing.T) {
	c := framework.Start(t)
	ns := c.NewNamespace(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(16, 23))
	const configs, podsPerConfig = 12, 40
	var admitted, refused int
	for k := 0; k < configs; k++ {
		if err := c.Client.CoreV1().LimitRanges(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		var ranges []*corev1.LimitRange
		for j := 0; j < 1+rng.IntN(2); j++ {
			items := randomItems(rng)
			if j == 0 {
				// A marker only PVCs see, for knowing when the API
				// server's LimitRange cache has this configuration.
				items = append(items, corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim,
					Max: corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(int64(k+1)<<30, resource.BinarySI)}})
			}
			created, err := c.Client.CoreV1().LimitRanges(ns).Create(ctx, &corev1.LimitRange{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%d-%d", k, j)},
				Spec:       corev1.LimitRangeSpec{Limits: items},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ranges = append(ranges, created)
		}
		waitForMarker(t, c, ns, k)
		for n := 0; n < podsPerConfig; n++ {
			p := randomPod(rng, ns)
			expected := p.DeepCopy()
			limitrange.DefaultPod(expected, ranges)
			want := recommendation.Admissible(expected, nil, ranges)
			_, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			switch {
			case want == nil && err != nil:
				t.Errorf("config %d pod %d: the API server refused a pod the restatement admits: %v\n%s", k, n, err, describeRanges(ranges, p))
			case want != nil && err == nil:
				t.Errorf("config %d pod %d: the API server admitted a pod the restatement refuses: %v\n%s", k, n, want, describeRanges(ranges, p))
			case want != nil:
				if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
					t.Errorf("config %d pod %d: unexpected error %v", k, n, err)
				}
				for _, line := range strings.Split(want.Error(), "\n") {
					if !strings.Contains(err.Error(), line) {
						t.Errorf("config %d pod %d: the API server's error %q lacks %q", k, n, err, line)
					}
				}
				refused++
			default:
				admitted++
			}
		}
	}
	t.Logf("%d pods admitted and %d refused, as the restatement says", admitted, refused)
	if admitted < configs*podsPerConfig/5 || refused < configs*podsPerConfig/5 {
		t.Errorf("too few of one outcome (%d admitted, %d refused) to compare the rules", admitted, refused)
	}
}

func waitForMarker(t *testing.T, c *framework.Cluster, ns string, k int) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "marker-", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: *resource.NewQuantity(int64(k+2)<<30, resource.BinarySI)}},
		},
	}
	want := fmt.Sprintf("maximum storage usage per PersistentVolumeClaim is %dGi", k+1)
	framework.WaitFor(t, time.Minute, func() (bool, error) {
		_, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), pvc, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), want), nil
	})
}

func quantity(rng *rand.Rand, name corev1.ResourceName) resource.Quantity {
	if name == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(int64(50*(1+rng.IntN(40))), resource.DecimalSI)
	}
	return *resource.NewQuantity(int64(32*(1+rng.IntN(40)))<<20, resource.BinarySI)
}

func randomList(rng *rand.Rand, p float64) corev1.ResourceList {
	var l corev1.ResourceList
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if rng.Float64() < p {
			if l == nil {
				l = corev1.ResourceList{}
			}
			l[name] = quantity(rng, name)
		}
	}
	return l
}

func randomItems(rng *rand.Rand) []corev1.LimitRangeItem {
	var items []corev1.LimitRangeItem
	if rng.IntN(3) > 0 {
		it := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: randomList(rng, 0.3), Max: randomList(rng, 0.4)}
		// The API server refuses a LimitRange whose min is above its max.
		for name, lo := range it.Min {
			if hi, ok := it.Max[name]; ok && lo.Cmp(hi) > 0 {
				it.Min[name], it.Max[name] = hi, lo
			}
		}
		if rng.IntN(4) == 0 {
			it.MaxLimitRequestRatio = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
		}
		items = append(items, it)
	}
	if rng.IntN(2) == 0 {
		it := corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: randomList(rng, 0.6), Min: randomList(rng, 0.2)}
		for name, lo := range it.Min {
			if hi, ok := it.Max[name]; ok && lo.Cmp(hi) > 0 {
				it.Min[name], it.Max[name] = hi, lo
			}
		}
		items = append(items, it)
	}
	return items
}

func randomPod(rng *rand.Rand, ns string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns}}
	for i := 0; i < 1+rng.IntN(3); i++ {
		req := randomList(rng, 0.7)
		var lim corev1.ResourceList
		switch rng.IntN(4) {
		case 1:
			lim = randomList(rng, 0.7) // may be below the request
		case 2, 3:
			lim = corev1.ResourceList{}
			for name, q := range req {
				if rng.IntN(3) > 0 {
					v := q.DeepCopy()
					v.Add(quantity(rng, name))
					lim[name] = v
				}
			}
		}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: fmt.Sprintf("c%d", i), Image: framework.DefaultImage,
			Resources: corev1.ResourceRequirements{Requests: req, Limits: lim},
		})
	}
	if rng.IntN(8) == 0 {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: framework.DefaultImage,
			Resources: corev1.ResourceRequirements{Requests: randomList(rng, 0.7), Limits: randomList(rng, 0.5)}}}
	}
	return p
}

func describeRanges(ranges []*corev1.LimitRange, p *corev1.Pod) string {
	var b strings.Builder
	for _, lr := range ranges {
		for _, it := range lr.Spec.Limits {
			fmt.Fprintf(&b, "LimitRange %s %s: min %v max %v default %v defaultRequest %v ratio %v\n", lr.Name, it.Type, it.Min, it.Max, it.Default, it.DefaultRequest, it.MaxLimitRequestRatio)
		}
	}
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		fmt.Fprintf(&b, "container %s: requests %v limits %v\n", c.Name, c.Resources.Requests, c.Resources.Limits)
	}
	return b.String()
}
