package explain

import (
	"fmt"
	"io"
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
	p("VPA %s/%s\ttarget %s\tmode %s\n", e.Namespace, e.Name, orNone(e.Target), e.UpdateMode)
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
					{"target", r.s.Target, target(c.Status)},
					{"lower", r.s.LowerBound, lower(c.Status)},
					{"upper", r.s.UpperBound, upper(c.Status)},
				} {
					conf := "-"
					if b.step.Confidence != nil {
						conf = fmt.Sprintf("%.3g", *b.step.Confidence)
					}
					p("  %s %s\tP%g\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.name, b.name, b.step.Percentile*100, b.step.Histogram, b.step.WithMargin,
						conf, b.step.WithConfidence, b.step.Minimum, b.step.Final, readable(r.name, b.status[r.name]))
				}
			}
		}
		if c.Status != nil {
			p("  status: target %s; uncapped %s; bounds [%s, %s]\n", list(c.Status.Target), list(c.Status.UncappedTarget), list(c.Status.LowerBound), list(c.Status.UpperBound))
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

func target(r *Recommendation) map[string]string {
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
