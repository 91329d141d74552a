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

package explain

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/openvpa/openvpa/recommender/model"
)

// WriteTable writes e as text: the VPA, then a section per container and
// one for the pods.
func WriteTable(w io.Writer, e *Explanation) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("VPA %s/%s\ttarget %s\tmode %s\testimator %s\n", e.Namespace, e.Name, orNone(e.Target), e.UpdateMode, orNone(e.Estimator))
	if e.ManagedBy != "" {
		p("  managed by %s: change the policy, not this VPA; a VPA of your own for the workload replaces it\n", e.ManagedBy)
	}
	for _, c := range e.Conditions {
		line := "  condition " + c.Type + "=" + c.Status
		if c.Reason != "" {
			line += " (" + c.Reason + ")"
		}
		if c.Message != "" {
			line += ": " + c.Message
		}
		p("%s\n", line)
	}
	for _, pr := range e.Problems {
		p("  problem: %s\n", pr)
	}
	for _, f := range e.Fits {
		p("  fit: %s\n", f)
	}
	for _, c := range e.Containers {
		p("\nContainer %s\tmode %s, controlledValues %s, resources %s\n", c.Name, c.Mode, c.ControlledValues, strings.Join(c.ControlledResources, ","))
		switch h := c.History; {
		case h == nil:
			p("  history: no checkpoint yet (the recommender writes one every --checkpoints-write-interval)\n")
		case h.Error != "":
			p("  history: the checkpoint cannot be restored: %s\n", h.Error)
		default:
			p("  history: %.2f days (%s to %s), %d samples, confidence %.2f days; checkpoint written %s\n",
				h.Days, stamp(h.FirstSampleStart.Time), stamp(h.LastSampleStart.Time), h.Samples, h.Confidence, stamp(h.Checkpointed.Time))
		}
		if c.CPU != nil || c.Memory != nil {
			p("  \tpercentile\thistogram\t+margin\tconfidence\tscaled\tminimum\testimate\tstatus\n")
			for _, r := range []struct {
				name string
				s    *Steps
			}{{"cpu", c.CPU}, {"memory", c.Memory}} {
				if r.s == nil {
					continue
				}
				for _, b := range []struct {
					name   string
					step   Step
					status map[string]string
				}{
					{"target", r.s.Target, targetOf(c.Status)},
					{"lower", r.s.LowerBound, lower(c.Status)},
					{"upper", r.s.UpperBound, upper(c.Status)},
				} {
					conf := "-"
					if b.step.Confidence != nil {
						conf = fmt.Sprintf("%.3g", *b.step.Confidence)
					}
					p("  %s %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.name, b.name, percentile(b.step.Percentile), b.step.Histogram, b.step.WithMargin,
						conf, b.step.WithConfidence, b.step.Minimum, b.step.Final, readable(r.name, b.status[r.name]))
				}
			}
		}
		if r := c.MemoryRule; r != nil {
			writeRule(p, r)
		}
		if x := c.ExpectedStatus; x != nil {
			p("  expected status: %s\n", x.line())
		}
		if c.Status != nil {
			p("  status: %s\n", c.Status.line())
		} else {
			p("  status: no recommendation\n")
		}
		if len(c.Clipped) == 0 && c.Status != nil {
			p("  clipped: no (target equals uncapped target)\n")
		}
		for _, cl := range c.Clipped {
			if cl.Value != "" {
				p("  clipped: %s by %s %s (uncapped %s, target %s)\n", cl.Resource, cl.Limit, cl.Value, readable(cl.Resource, cl.Uncapped), readable(cl.Resource, cl.Target))
			} else {
				p("  clipped: %s by %s (uncapped %s, target %s)\n", cl.Resource, cl.Limit, readable(cl.Resource, cl.Uncapped), readable(cl.Resource, cl.Target))
			}
		}
		for _, n := range c.Notes {
			p("  note: %s\n", n)
		}
		for _, o := range c.OOMs {
			p("  OOM kill: pod %s at %s after %s (memory request %s)\n", o.Pod, stamp(o.Finished.Time), o.RanFor, orNone(o.MemoryRequest))
		}
	}
	p("\nUpdater: %s\n", e.Updater.Summary)
	for _, n := range e.Updater.Notes {
		p("  note: %s\n", n)
	}
	if len(e.Pods) > 0 {
		p("POD\tCONTAINER\tCPU REQUEST\tCPU TARGET [LOWER, UPPER]\tMEMORY REQUEST\tMEMORY TARGET [LOWER, UPPER]\n")
		for _, pod := range e.Pods {
			for i, c := range pod.Containers {
				name := pod.Name
				if i > 0 {
					name = ""
				}
				p("%s\t%s\t%s\t%s\t%s\t%s\n", name, c.Name, orNone(c.Requests["cpu"]), rangeOf(c, "cpu"), orNone(c.Requests["memory"]), rangeOf(c, "memory"))
			}
		}
		for _, pod := range e.Pods {
			p("%s: %s; age %s\n", pod.Name, pod.Phase, orNone(pod.Age))
			for _, c := range pod.Containers {
				if len(c.Capped) > 0 {
					p("  %s: recommendation %s for this pod\n", c.Name, strings.Join(c.Capped, ", "))
				}
			}
			p("  decision: %s\n", orNone(pod.Decision))
			p("  action: %s\n", pod.Action)
		}
	} else {
		p("no pods\n")
	}
	for _, wn := range e.Warnings {
		p("warning: %s\n", wn)
	}
	return tw.Flush()
}

// writeRule writes the memory rule's line, and the recent jump's for the
// adaptive estimator.
func writeRule(p func(string, ...any), r *MemoryRule) {
	m := r.Margin
	peak := fmt.Sprintf("the highest peak of %s, %s at %s (typical %s; %.3g%% of the peaks read 0)",
		r.Horizon, r.Level, percentile(r.LevelPercentile), r.Typical, r.ZeroShare*100)
	if a := r.Arm; a != nil {
		p("  memory rule: of %d arms the cheapest covers %s, with margin %.3g arm + %.3g young + %.3g zero readings = %.3g (young and zero at most %.3g): %s; cost %.3g = headroom %.3g + %.3g × overrun %.3g\n",
			a.Scored, peak, m.Base, m.Young, m.Zero, m.Total, m.Max, r.Covered, a.Cost, a.Headroom, a.OverrunCost, a.Overrun)
	} else {
		p("  memory rule: covers %s, with margin %.3g base + %.3g variability + %.3g young + %.3g zero readings = %.3g (at most %.3g): %s\n",
			peak, m.Base, m.Variability, m.Young, m.Zero, m.Total, m.Max, r.Covered)
	}
	j := r.RecentJump
	switch {
	case j == nil:
	case !j.Found:
		p("  recent jump: none (no peak of the last %s above a lower one)\n", j.Window)
	default:
		effect := "not above the arm's: the arm sets the target"
		if j.SetsTarget {
			effect = "above the arm's: sets the target, and the lower bound from " + j.Top
		}
		p("  recent jump: %s at %s over %s, with margin min(%.3g × (%s/%s − 1), %.3g) = %.3g: %s, %s\n",
			j.Top, percentile(j.Percentile), j.Prior, j.Factor, j.Top, j.Prior, j.MaxMargin, j.Margin, j.Covered, effect)
	}
}

// percentile formats p (0.99996) as a percentile, P99.996: in percent,
// truncated to three decimals, so a percentile below 1 never shows as
// P100.
func percentile(p float64) string {
	v := math.Floor(p*1e5+1e-6) / 1000
	if v >= 100 && p < 1 {
		v = 99.999
	}
	return "P" + strconv.FormatFloat(v, 'f', -1, 64)
}

func targetOf(r *Recommendation) map[string]string {
	if r == nil {
		return nil
	}
	return r.Target
}

func lower(r *Recommendation) map[string]string {
	if r == nil {
		return nil
	}
	return r.LowerBound
}

func upper(r *Recommendation) map[string]string {
	if r == nil {
		return nil
	}
	return r.UpperBound
}

func rangeOf(c PodContainer, r string) string {
	t, ok := c.Target[r]
	if !ok {
		return "-"
	}
	s := fmt.Sprintf("%s [%s, %s]", readable(r, t), readable(r, c.LowerBound[r]), readable(r, c.UpperBound[r]))
	if pos := c.Position[r]; pos != "" && pos != "within bounds" && pos != "at target" {
		s += " " + strings.ToUpper(pos)
	}
	return s
}

func list(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, r := range []string{"cpu", "memory"} {
		if v, ok := m[r]; ok {
			parts = append(parts, r+"="+readable(r, v))
		}
	}
	return strings.Join(parts, " ")
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// readable formats a memory quantity that is not a whole number of a unit
// (the recommender writes bytes) as explain's memory steps are formatted;
// anything else is returned as it is ("-" for none).
func readable(resourceName, q string) string {
	if q == "" {
		return "-"
	}
	if resourceName != "memory" {
		return q
	}
	v, err := resource.ParseQuantity(q)
	if err != nil {
		return q
	}
	return memoryQuantity(model.ResourceAmount(v.Value()))
}

// line is r on one line of the table.
func (r *Recommendation) line() string {
	return fmt.Sprintf("target %s; uncapped %s; bounds [%s, %s]", list(r.Target), list(r.UncappedTarget), list(r.LowerBound), list(r.UpperBound))
}
