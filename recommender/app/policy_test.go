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

package app

import (
	"context"
	"errors"
	"testing"
)

func TestAlongside(t *testing.T) {
	boom := errors.New("boom")
	untilDone := func(ctx context.Context) error { <-ctx.Done(); return nil }
	for _, tc := range []struct {
		name string
		a, b func(context.Context) error
		want error
	}{
		{"an error of one stops the other", untilDone, func(context.Context) error { return boom }, boom},
		{"one returning stops the other", func(context.Context) error { return nil }, untilDone, nil},
		{"the error, whichever returns it", func(context.Context) error { return boom }, untilDone, boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := alongside(tc.a, tc.b)(context.Background()); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}
