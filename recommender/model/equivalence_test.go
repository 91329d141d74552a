package model

import (
	"math"
	"math/rand/v2"
	"testing"
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

func (d *dense) add(v, weight float64) {
	b := d.opts.FindBucket(v)
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
	b := d.opts.FindBucket(v)
	if weight > d.w[b]-d.opts.Epsilon() {
		weight = d.w[b]
	}
	d.total -= weight
	d.w[b] -= weight
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
