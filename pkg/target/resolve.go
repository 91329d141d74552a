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

package target

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
)

// Target is a VPA with its resolved targetRef and selector.
type Target struct {
	VPA      *vpav1.VerticalPodAutoscaler
	Ref      Ref
	Selector labels.Selector
}

// ConfigError says why a VPA's targetRef is unsupported. Message is the text
// of the ConfigUnsupported condition, worded as upstream.
type ConfigError struct {
	Message string
	// Err is the underlying error, if any.
	Err error
}

func (e *ConfigError) Error() string { return e.Message }
func (e *ConfigError) Unwrap() error { return e.Err }

// Resolve reads the VPA's selector and checks that its targetRef is a topmost
// well-known or scalable controller. Any failure is a *ConfigError.
func (r *Resolver) Resolve(ctx context.Context, vpa *vpav1.VerticalPodAutoscaler) (*Target, error) {
	if vpa.Spec.TargetRef == nil {
		return nil, &ConfigError{Message: "Cannot read targetRef"}
	}
	sel, err := r.Selector(ctx, vpa)
	if err != nil {
		return nil, &ConfigError{Message: fmt.Sprintf("Cannot read targetRef. Reason: %s", err), Err: err}
	}
	ref := RefFromTargetRef(vpa.Namespace, vpa.Spec.TargetRef)
	top, err := r.TopmostController(ctx, ref)
	if err != nil {
		return nil, &ConfigError{
			Message: fmt.Sprintf("Error checking if target %s is a topmost well-known or scalable controller: %s", ref, err),
			Err:     err,
		}
	}
	if top == nil {
		return nil, &ConfigError{Message: fmt.Sprintf("Unknown error during checking if target %s is a topmost well-known or scalable controller", ref)}
	}
	if !top.SameObject(ref) {
		return nil, &ConfigError{Message: fmt.Sprintf("The target %s has a parent controller but it should point to a topmost well-known or scalable controller", ref)}
	}
	return &Target{VPA: vpa, Ref: ref, Selector: sel}, nil
}
