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

// Package features declares OpenVPA's feature gates, accepted on every
// component through --feature-gates with upstream VPA's names.
package features

import (
	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
)

const (
	// CPUStartupBoost enables the temporary CPU boost of spec.startupBoost.
	CPUStartupBoost featuregate.Feature = "CPUStartupBoost"
	// InPlace enables the InPlace update mode. Upstream keeps it alpha and off;
	// here it is on by default and the gate exists so upstream flags keep working.
	InPlace featuregate.Feature = "InPlace"
	// PerVPAConfig enables the per-VPA OOM, memory aggregation and
	// evictAfterOOMSeconds settings. Off by default, as upstream.
	PerVPAConfig featuregate.Feature = "PerVPAConfig"
	// NativeSidecar makes the components treat native sidecars (init
	// containers with restartPolicy: Always) as containers: recommended,
	// patched at admission and updated. Upstream's name (AEP-8905) and
	// default: off, because with it a VPA starts changing the resources of
	// containers it has always left alone, and every sidecar's request adds
	// to the pod's; turn it on in all three components together.
	NativeSidecar featuregate.Feature = "NativeSidecar"
)

var defaults = map[featuregate.Feature]featuregate.FeatureSpec{
	CPUStartupBoost: {Default: false, PreRelease: featuregate.Alpha},
	InPlace:         {Default: true, PreRelease: featuregate.Beta},
	PerVPAConfig:    {Default: false, PreRelease: featuregate.Alpha},
	NativeSidecar:   {Default: false, PreRelease: featuregate.Alpha},
}

// NewGate returns a gate with OpenVPA's features registered at their defaults.
func NewGate() featuregate.MutableFeatureGate {
	g := featuregate.NewFeatureGate()
	if err := g.Add(defaults); err != nil {
		// The table above is static; a failure here is a programming error.
		panic(err)
	}
	return g
}

// AddFlag registers --feature-gates for the gate.
func AddFlag(fs *pflag.FlagSet, g featuregate.MutableFeatureGate) {
	g.AddFlag(fs)
}
