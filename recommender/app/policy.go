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

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/openvpa/openvpa/recommender/app/options"
	"github.com/openvpa/openvpa/recommender/policy"
)

// policyLeaseSuffix names the policy controller's Lease with --shards.
const policyLeaseSuffix = "-policy"

// newPolicyController builds the policy controller. Its clients have a
// rate limiter of their own, with the recommender's --kube-api-qps and
// --kube-api-burst.
func newPolicyController(cfg *rest.Config, o *options.Options, reg prometheus.Registerer, clk clock.WithTicker) (*policy.Controller, error) {
	c, err := policy.NewClients(rest.CopyConfig(cfg))
	if err != nil {
		return nil, err
	}
	return policy.New(policy.Options{Namespaces: o.Namespaces.Filter(), Registerer: reg, Clock: clk, Component: Name}, c), nil
}

// alongside runs b beside a: it stops when either returns, and returns the
// first error.
func alongside(a, b func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		g, ctx := errgroup.WithContext(ctx)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for _, f := range []func(context.Context) error{a, b} {
			g.Go(func() error {
				defer cancel()
				return f(ctx)
			})
		}
		return g.Wait()
	}
}
