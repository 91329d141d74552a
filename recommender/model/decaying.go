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
	"errors"
	"math"
	"time"
)

// MaxDecayExponent is the largest power of two a sample weight may be
// multiplied by before the reference timestamp is moved forward.
const MaxDecayExponent = 100

var (
	errOptionsMismatch  = errors.New("histograms use different bucketing options")
	errHalfLifeMismatch = errors.New("decaying histograms use different half-lives")
)

// DecayingHistogram is a Histogram whose sample weights grow by a factor of
// 2^((t − reference)/halfLife) with the sample time t, so that a sample loses
// half of its relative importance every half-life. The reference timestamp is
// always a multiple of the half-life (as time.Time.Round counts); it moves
// forward when a sample arrives more than MaxDecayExponent half-lives after
// it, and all weights are then rescaled by the matching power of two.
//
// The zero value is not usable; build one with NewDecayingHistogram.
type DecayingHistogram struct {
	h         Histogram
	halfLife  time.Duration
	reference time.Time
	// ref is reference as a wallTime, kept so that a sample's distance from
	// the reference costs two subtractions rather than time.Time.Sub.
	ref wallTime
}

// NewDecayingHistogram returns an empty decaying histogram with the given
// scheme and half-life (> 0) and a zero reference timestamp.
func NewDecayingHistogram(opts *HistogramOptions, halfLife time.Duration) DecayingHistogram {
	d := DecayingHistogram{h: NewHistogram(opts), halfLife: halfLife}
	d.setReference(time.Time{})
	return d
}

// setReference sets the reference timestamp without rescaling.
func (d *DecayingHistogram) setReference(t time.Time) {
	d.reference, d.ref = t, wallOf(t)
}

// HalfLife returns the decay half-life.
func (d *DecayingHistogram) HalfLife() time.Duration { return d.halfLife }

// ReferenceTimestamp returns the time at which a sample has its nominal weight.
func (d *DecayingHistogram) ReferenceTimestamp() time.Time { return d.reference }

// Histogram returns the underlying (already decayed) weights.
func (d *DecayingHistogram) Histogram() *Histogram { return &d.h }

// AddSample adds a sample of value with weight·decayFactor(t).
func (d *DecayingHistogram) AddSample(value, weight float64, t time.Time) {
	d.h.AddSample(value, weight*d.decayFactor(t))
}

// SubtractSample removes a sample of value with weight·decayFactor(t).
func (d *DecayingHistogram) SubtractSample(value, weight float64, t time.Time) {
	d.h.SubtractSample(value, weight*d.decayFactor(t))
}

// Percentile returns the upper edge of the bucket holding the p-th percentile.
func (d *DecayingHistogram) Percentile(p float64) float64 { return d.h.Percentile(p) }

// IsEmpty reports whether the histogram has no non-empty bucket.
func (d *DecayingHistogram) IsEmpty() bool { return d.h.IsEmpty() }

// TotalWeight returns the total (decayed) weight.
func (d *DecayingHistogram) TotalWeight() float64 { return d.h.total }

// Merge adds other to d, after aligning the older reference timestamp with
// the younger one. other is left unchanged. Both must use equal options and
// half-lives.
func (d *DecayingHistogram) Merge(other *DecayingHistogram) error {
	if d.halfLife != other.halfLife {
		return errHalfLifeMismatch
	}
	if !d.h.opts.Equal(other.h.opts) {
		return errOptionsMismatch
	}
	switch {
	case d.reference.Before(other.reference):
		d.shiftReference(other.reference)
	case other.reference.Before(d.reference):
		o := other.clone()
		o.shiftReference(d.reference)
		return d.h.Merge(&o.h)
	}
	return d.h.Merge(&other.h)
}

// clone returns a deep copy.
func (d *DecayingHistogram) clone() DecayingHistogram {
	c := *d
	c.h = d.h.clone()
	return c
}

// Equal reports whether two decaying histograms hold the same state.
func (d *DecayingHistogram) Equal(other *DecayingHistogram) bool {
	return d.halfLife == other.halfLife && d.reference.Equal(other.reference) && d.h.Equal(&other.h)
}

// shiftReference moves the reference to t rounded to the half-life and
// scales the weights by 2^round((old − new)/halfLife).
func (d *DecayingHistogram) shiftReference(t time.Time) {
	t = t.Round(d.halfLife)
	exp := roundHalfUp(float64(d.reference.Sub(t)) / float64(d.halfLife))
	d.h.scale(math.Ldexp(1, exp))
	d.setReference(t)
}

// decayFactor returns 2^((t − reference)/halfLife), first moving the
// reference when t is more than MaxDecayExponent half-lives after it.
func (d *DecayingHistogram) decayFactor(t time.Time) float64 {
	return d.decayFactorAt(t, wallOf(t))
}

// decayFactorAt is decayFactor for t, given as w too. Its test is the common
// case, a sample less than 2^32 s after the reference, computed from the
// reference's cached Unix time rather than with time.Time.Sub.
func (d *DecayingHistogram) decayFactorAt(t time.Time, w wallTime) float64 {
	if s := w.sec - d.ref.sec; s >= 0 && s < maxFastSeconds {
		since := time.Duration(s)*time.Second + time.Duration(w.nsec-d.ref.nsec)
		if since <= time.Duration(int64(d.halfLife)*MaxDecayExponent) {
			return exp2(float64(since) / float64(d.halfLife))
		}
	}
	return d.decayFactorSlow(t)
}

// decayFactorSlow is decayFactor for any t.
func (d *DecayingHistogram) decayFactorSlow(t time.Time) float64 {
	since := t.Sub(d.reference)
	if since > time.Duration(int64(d.halfLife)*MaxDecayExponent) {
		d.shiftReference(t)
		since = t.Sub(d.reference)
	}
	return exp2(float64(since) / float64(d.halfLife))
}

// maxFastSeconds bounds the distance from the reference for which
// decayFactor computes t − reference from Unix seconds, far from any risk of
// overflowing a Duration.
const maxFastSeconds = 1 << 32

// roundHalfUp returns floor(x + 0.5) as an int.
func roundHalfUp(x float64) int {
	return int(math.Floor(x + 0.5))
}
