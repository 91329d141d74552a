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

// Command metricnames prints every metric the three components register on
// their own registries (not the Go and process collectors), one a line:
// component, name, labels (comma-separated) and help, separated by tabs,
// sorted. hack/verify-reference.sh checks docs/reference.md against it and
// hack/verify-monitoring.sh checks that the alerts and the dashboard use
// only these names.
//
//	go run ./hack/metricnames
package main

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/openvpa/openvpa/admission-controller/webhook"
	"github.com/openvpa/openvpa/pkg/informers"
	"github.com/openvpa/openvpa/pkg/leaderelection"
	"github.com/openvpa/openvpa/pkg/shards"
	"github.com/openvpa/openvpa/recommender/input/history"
	"github.com/openvpa/openvpa/recommender/metrics"
	"github.com/openvpa/openvpa/recommender/policy"
	"github.com/openvpa/openvpa/updater/loop"
)

func main() {
	lines, err := list()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, l := range lines {
		fmt.Println(l)
	}
}

// registries returns a registry per component with what it registers.
func registries() (map[string]*prometheus.Registry, error) {
	regs := map[string]*prometheus.Registry{}
	for _, c := range []string{"recommender", "updater", "admission-controller"} {
		regs[c] = prometheus.NewRegistry()
	}
	rec := regs["recommender"]
	metrics.New(rec)
	metrics.NewRecommendationGauges(rec)
	history.NewMetrics(rec)
	history.NewLoader(nil, history.LoaderOptions{Registerer: rec})
	policy.New(policy.Options{Registerer: rec}, policy.Clients{})
	if _, err := shards.New(shards.Options{
		Shards: 1, Name: "n", Namespace: "ns", Identity: "id", Registerer: rec,
		LeaseDuration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: time.Second,
	}, nil); err != nil {
		return nil, err
	}
	loop.NewMetrics(regs["updater"])
	adm := regs["admission-controller"]
	webhook.NewMetrics(adm)
	adm.MustRegister((&webhook.CertWatcher{}).ExpiryCollector())
	var set informers.Set
	rec.MustRegister(set.Collector("vpa_recommender"))
	// The components that run a loop elect a leader (pkg/component).
	for _, c := range []string{"recommender", "updater"} {
		if _, err := leaderelection.LeaderMetric(regs[c], "lease"); err != nil {
			return nil, err
		}
	}
	return regs, nil
}

// desc matches prometheus.Desc.String().
var desc = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", help: "((?:[^"\\]|\\.)*)", unit: "[^"]*", constLabels: \{[^}]*\}, variableLabels: \{([^}]*)\}\}$`)

func list() ([]string, error) {
	regs, err := registries()
	if err != nil {
		return nil, err
	}
	var out []string
	for c, reg := range regs {
		ch := make(chan *prometheus.Desc)
		go func() {
			// A Registry is a Collector of everything registered on it.
			reg.Describe(ch)
			close(ch)
		}()
		for d := range ch {
			m := desc.FindStringSubmatch(d.String())
			if m == nil {
				return nil, fmt.Errorf("unexpected description %s", d)
			}
			out = append(out, strings.Join([]string{c, m[1], m[3], m[2]}, "\t"))
		}
	}
	sort.Strings(out)
	return out, nil
}
