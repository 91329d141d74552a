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

// Package namespaces implements the namespace filter shared by the three
// components: --vpa-object-namespace and --ignored-vpa-object-namespaces.
package namespaces

import (
	"errors"
	"strings"

	"github.com/spf13/pflag"
)

// Options select the namespaces whose VPAs a component handles.
type Options struct {
	// Namespace limits the component to one namespace; empty means all.
	Namespace string
	// Ignored is a comma-separated list of namespaces to skip.
	Ignored string
}

// AddFlags registers --vpa-object-namespace and --ignored-vpa-object-namespaces.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Namespace, "vpa-object-namespace", o.Namespace, "Specifies the namespace to search for VPA objects. Leave empty to include all namespaces. If provided, the garbage collector will only clean this namespace.")
	fs.StringVar(&o.Ignored, "ignored-vpa-object-namespaces", o.Ignored, "A comma-separated list of namespaces to ignore when searching for VPA objects. Leave empty to avoid ignoring any namespaces. These namespaces will not be cleaned by the garbage collector.")
}

// Validate rejects setting both flags, as upstream does.
func (o *Options) Validate() error {
	if o.Namespace != "" && o.Ignored != "" {
		return errors.New("--vpa-object-namespace and --ignored-vpa-object-namespaces are mutually exclusive and can't be set together")
	}
	return nil
}

// Filter answers whether a namespace is handled.
type Filter struct {
	only    string
	ignored map[string]struct{}
}

// Filter builds the filter the options describe.
func (o *Options) Filter() Filter {
	f := Filter{only: o.Namespace}
	for _, ns := range strings.Split(o.Ignored, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			if f.ignored == nil {
				f.ignored = map[string]struct{}{}
			}
			f.ignored[ns] = struct{}{}
		}
	}
	return f
}

// Allows reports whether objects in the namespace are handled.
func (f Filter) Allows(namespace string) bool {
	if f.only != "" && namespace != f.only {
		return false
	}
	_, skip := f.ignored[namespace]
	return !skip
}

// WatchNamespace is the namespace informers should watch: the single allowed
// namespace, or "" (all) otherwise.
func (f Filter) WatchNamespace() string {
	return f.only
}
