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

package namespaces

import "testing"

func TestFilter(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		allowed map[string]bool
		watch   string
	}{
		{name: "everything by default", allowed: map[string]bool{"a": true, "kube-system": true}},
		{name: "one namespace", opts: Options{Namespace: "a"}, allowed: map[string]bool{"a": true, "b": false}, watch: "a"},
		{name: "ignored list with spaces", opts: Options{Ignored: "b, c ,"}, allowed: map[string]bool{"a": true, "b": false, "c": false, "": true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.opts.Filter()
			for ns, want := range tc.allowed {
				if got := f.Allows(ns); got != want {
					t.Errorf("Allows(%q) = %v, want %v", ns, got, want)
				}
			}
			if got := f.WatchNamespace(); got != tc.watch {
				t.Errorf("WatchNamespace() = %q, want %q", got, tc.watch)
			}
		})
	}
}

func TestValidateRejectsBothFlags(t *testing.T) {
	if err := (&Options{Namespace: "a", Ignored: "b"}).Validate(); err == nil {
		t.Fatal("expected an error when both flags are set")
	}
	if err := (&Options{Namespace: "a"}).Validate(); err != nil {
		t.Fatal(err)
	}
}
