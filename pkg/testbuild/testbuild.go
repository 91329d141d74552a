// Package testbuild builds the API objects tests of several packages need,
// so that each is written once.
package testbuild

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Resources returns a ResourceList of cpu and memory, parsed as quantities;
// an empty string leaves that resource out. It panics on a malformed
// quantity, as tests want.
func Resources(cpu, memory string) corev1.ResourceList {
	l := corev1.ResourceList{}
	if cpu != "" {
		l[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		l[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return l
}
