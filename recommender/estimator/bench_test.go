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

package estimator

import (
	"math"
	"testing"
	"time"

	"github.com/openvpa/openvpa/recommender/model"
)

// BenchmarkRecommendOneContainer runs the whole percentile chain, with
// conversion to quantities and capping, for one container with a day of
// 1-minute CPU samples and memory samples.
func BenchmarkRecommendOneContainer(b *testing.B) {
	benchmarkRecommend(b, NewPercentile(DefaultConfig()), 0)
}

// BenchmarkRecommendOneContainerAdaptive is BenchmarkRecommendOneContainer
// for the adaptive estimator (30 arms) over two weeks of daily peaks.
func BenchmarkRecommendOneContainerAdaptive(b *testing.B) {
	benchmarkRecommend(b, NewAdaptive(DefaultConfig(), DefaultAdaptiveConfig()), 14)
}

func benchmarkRecommend(b *testing.B, e Estimator, dailyPeaks int) {
	a := model.NewAggregateState(nil, start)
	c := model.NewContainerState(a)
	for i := 0; i < 24*60; i++ {
		ts := start.Add(time.Duration(i) * time.Minute)
		c.AddCPUSample(ts, model.ResourceAmount(500+400*math.Sin(2*math.Pi*float64(i)/1440)))
		c.AddMemorySample(ts, model.ResourceAmount(300<<20+i<<12))
	}
	// Daily peaks after the first day, spread over as many buckets.
	for d := 1; d <= dailyPeaks; d++ {
		c.AddMemorySample(start.Add(time.Duration(d)*24*time.Hour), model.ResourceAmount(300<<20+d*(30<<20)))
	}
	aggs := map[string]*model.AggregateState{"app": a}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.Recommend(aggs, nil, nil)
	}
}
