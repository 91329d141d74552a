package vpa

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsName(list []corev1.ResourceName, n corev1.ResourceName) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}
