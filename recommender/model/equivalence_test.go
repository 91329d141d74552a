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

package model

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// dense is a straightforward histogram over all buckets, written from the
// specification, against which the windowed Histogram is checked.
type dense struct {
	opts     *HistogramOptions
	w        []float64
	total    float64
	min, max int
}

func newDense(o *HistogramOptions) *dense {
	return &dense{opts: o, w: make([]float64, o.NumBuckets()), min: o.NumBuckets() - 1}
}

// specBucket is the bucket of v by the specification's formula, computed
// with math.Log on every call.
func specBucket(o *HistogramOptions, v float64) int {
	if !(v >= o.first) {
		return 0
	}
	return min(int(math.Log(v*(o.ratio-1)/o.first+1)/math.Log(o.ratio)), o.numBuckets-1)
}

func (d *dense) add(v, weight float64) {
	b := specBucket(d.opts, v)
	d.w[b] += weight
	d.total += weight
	if b < d.min && d.w[b] >= d.opts.Epsilon() {
		d.min = b
	}
	if b > d.max && d.w[b] >= d.opts.Epsilon() {
		d.max = b
	}
}

func (d *dense) fix() {
	for d.w[d.min] < d.opts.Epsilon() && d.min < len(d.w)-1 {
		d.min++
	}
	for d.w[d.max] < d.opts.Epsilon() && d.max > 0 {
		d.max--
	}
}

func (d *dense) sub(v, weight float64) {
	b := specBucket(d.opts, v)
	eps := d.opts.Epsilon()
	d.total -= weight
	if d.total < eps {
		d.total = 0
	}
	d.w[b] -= weight
	if d.w[b] < eps {
		d.w[b] = 0
	}
	d.fix()
}

func (d *dense) merge(o *dense) {
	for b := o.min; b <= o.max; b++ {
		d.w[b] += o.w[b]
	}
	d.total += o.total
	d.min = min(d.min, o.min)
	d.max = max(d.max, o.max)
}

func (d *dense) scale(f float64) {
	for b := d.min; b <= d.max; b++ {
		d.w[b] *= f
	}
	d.total *= f
	d.fix()
}

func (d *dense) percentile(p float64) float64 {
	if d.w[d.min] < d.opts.Epsilon() {
		return 0
	}
	sum, threshold, b := 0.0, p*d.total, d.min
	for ; b < d.max; b++ {
		sum += d.w[b]
		if sum >= threshold {
			break
		}
	}
	if b < len(d.w)-1 {
		return d.opts.BucketStart(b + 1)
	}
	return d.opts.BucketStart(b)
}

func (d *dense) checkpoint() map[int]uint32 {
	out := map[int]uint32{}
	heaviest := 0.0
	for b := d.min; b <= d.max; b++ {
		heaviest = max(heaviest, d.w[b])
	}
	if heaviest == 0 {
		return out
	}
	for b := d.min; b <= d.max; b++ {
		if w := uint32(math.Floor(d.w[b]*MaxCheckpointWeight/heaviest + 0.5)); w > 0 {
			out[b] = w
		}
	}
	return out
}

func sameState(t *testing.T, step int, op string, d *dense, h *Histogram) {
	t.Helper()
	if d.min != int(h.min) || d.max != int(h.max) || d.total != h.total {
		t.Fatalf("step %d (%s): min/max/total = %d/%d/%v, dense %d/%d/%v", step, op, h.min, h.max, h.total, d.min, d.max, d.total)
	}
	for b := range d.w {
		if d.w[b] != h.weight(b) {
			t.Fatalf("step %d (%s): bucket %d = %v, dense %v", step, op, b, h.weight(b), d.w[b])
		}
	}
	for _, p := range []float64{0, 0.01, 0.1, 0.5, 0.9, 0.95, 0.999, 1} {
		if got, want := h.Percentile(p), d.percentile(p); got != want {
			t.Fatalf("step %d (%s): P%v = %v, dense %v", step, op, p, got, want)
		}
	}
	dh := DecayingHistogram{h: *h}
	got, want := encodeHistogram(&dh).BucketWeights, d.checkpoint()
	if len(got) != len(want) {
		t.Fatalf("step %d (%s): checkpoint %v, dense %v", step, op, got, want)
	}
	for b, w := range want {
		if got[b] != w {
			t.Fatalf("step %d (%s): checkpoint %v, dense %v", step, op, got, want)
		}
	}
}

func TestHistogramMatchesDenseReference(t *testing.T) {
	opts := DefaultCPUHistogramOptions()
	weights := []float64{0.1, 1, 2.5, 1e-6, 5e-5, 1e-4, 0.1 * math.Exp2(30), 1e3}
	for seed := uint64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewPCG(seed, seed*7919))
		value := func() float64 {
			if r.IntN(10) == 0 {
				return []float64{0, 0.01, 1000, 5000}[r.IntN(4)]
			}
			return math.Exp(r.Float64()*8 - 4) // about 0.02 to 55 cores
		}
		hs := [2]Histogram{NewHistogram(opts), NewHistogram(opts)}
		ds := [2]*dense{newDense(opts), newDense(opts)}
		var added [2][]float64
		for step := 0; step < 400; step++ {
			i := r.IntN(2)
			h, d := &hs[i], ds[i]
			var op string
			switch k := r.IntN(20); {
			case k < 10:
				op = "add"
				v, w := value(), weights[r.IntN(len(weights))]
				h.AddSample(v, w)
				d.add(v, w)
				added[i] = append(added[i], v)
			case k < 15:
				op = "subtract"
				v := value()
				if len(added[i]) > 0 && r.IntN(2) == 0 {
					v = added[i][r.IntN(len(added[i]))]
				}
				w := weights[r.IntN(len(weights))]
				h.SubtractSample(v, w)
				d.sub(v, w)
			case k < 17:
				op = "merge"
				h.Merge(&hs[1-i])
				d.merge(ds[1-i])
			case k < 19:
				op = "scale"
				f := math.Ldexp(1, r.IntN(41)-30)
				h.scale(f)
				d.scale(f)
			default:
				op = "reset"
				hs[i], ds[i], added[i] = NewHistogram(opts), newDense(opts), nil
				h, d = &hs[i], ds[i]
			}
			sameState(t, step, op, d, h)
		}
	}
}

// TestCPUSamplesMatchSpecification feeds random CPU sample streams through
// container instances into an aggregate and, in parallel, into the dense
// reference with the specification's decay: weight 0.1·2^((t − ref)/halfLife)
// computed with math.Exp2, the reference moved to t.Round(halfLife) with a
// power-of-two rescale past 100 half-lives. Weights must agree bit for bit.
func TestCPUSamplesMatchSpecification(t *testing.T) {
	cfg := DefaultConfig()
	halfLife := cfg.CPUHistogramDecayHalfLife
	for seed := uint64(1); seed <= 10; seed++ {
		r := rand.New(rand.NewPCG(seed, seed*104729))
		now := testStart.Add(time.Duration(r.Int64N(int64(1000 * time.Hour))))
		agg := NewAggregateState(cfg, now)
		instances := []*ContainerState{NewContainerState(agg), NewContainerState(agg)}
		d := newDense(cfg.CPUHistogramOptions)
		var ref time.Time
		for step := 0; step < 3000; step++ {
			// Mostly a minute apart with second resolution, sometimes
			// nanoseconds, now and then weeks at once (reference shifts).
			switch k := r.IntN(100); {
			case k < 90:
				now = now.Add(time.Minute + time.Duration(r.IntN(3000)-1500)*time.Millisecond).Truncate(time.Second)
			case k < 98:
				now = now.Add(time.Duration(r.Int64N(int64(time.Minute))))
			default:
				now = now.Add(time.Duration(r.Int64N(int64(300 * 24 * time.Hour))))
			}
			m := ResourceAmount(r.Int64N(5_000_000))
			if r.IntN(20) == 0 {
				m = ResourceAmount(r.IntN(20))
			}
			c := instances[r.IntN(len(instances))]
			if !c.AddCPUSample(now, m) {
				continue
			}
			if now.Sub(ref) > time.Duration(int64(halfLife)*MaxDecayExponent) {
				next := now.Round(halfLife)
				d.scale(math.Exp2(math.Floor(float64(ref.Sub(next))/float64(halfLife) + 0.5)))
				ref = next
			}
			d.add(float64(m)/1000, MinSampleWeight*math.Exp2(float64(now.Sub(ref))/float64(halfLife)))
			if !agg.CPU.ReferenceTimestamp().Equal(ref) {
				t.Fatalf("seed %d step %d: reference %v, specification %v", seed, step, agg.CPU.ReferenceTimestamp(), ref)
			}
			sameState(t, step, "add cpu", d, &agg.CPU.h)
		}
	}
}
