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

package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"text/tabwriter"

	"github.com/openvpa/openvpa/kubectl-vpa/replay"
)

// BoundsGoal is the OOM-free share at which the printed table compares the
// reference rules.
const BoundsGoal = 0.95

// analyzeBounds is the replay.Analyzer of the reference rules: it scores
// them on the trace, writes bounds.csv, draws their fronts on frontier.svg
// and prints the leanest setting of each.
func analyzeBounds(_ context.Context, trace *replay.Trace) (replay.Analysis, error) {
	return boundsAnalysis(Bounds(trace)), nil
}

// boundsAnalysis is the score of every setting of every reference rule on
// one trace.
type boundsAnalysis []BoundPoint

// WriteFiles writes bounds.csv to dir.
func (a boundsAnalysis) WriteFiles(dir string) ([]string, error) {
	const name = "bounds.csv"
	if err := writeFile(filepath.Join(dir, name), func(w io.Writer) error { return WriteBoundsCSV(w, a) }); err != nil {
		return nil, err
	}
	return []string{name}, nil
}

// Print prints the leanest setting of every reference rule that is
// OOM-free on at least BoundsGoal of its days.
func (a boundsAnalysis) Print(w io.Writer) {
	fmt.Fprintf(w, "\nreference rules (the trace's own peaks; no model, updater or OOM feedback), leanest with >= %.0f%% OOM-free days:\n", 100*BoundsGoal)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "rule\tsetting\tdays\tmem slack mean\tmedian\tOOM-free\t")
	for _, p := range LeanestBound(a, BoundsGoal) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%.3f\t%.1f%%\t\n", p.Rule, p.Setting(), p.WorkloadDays, p.MemorySlackMean, p.MemorySlackMedian, 100*p.OOMFreeFraction)
	}
	tw.Flush()
}

// FrontierLines are the Pareto fronts of the reference rules from
// replay.FrontierMinOOMFree on: recent-peak, with kills answered too,
// part-peak for every number of parts, hindsight-margin, forward-margin
// with kills answered, and the oracle.
func (a boundsAnalysis) FrontierLines() []replay.Line {
	var lines []replay.Line
	refs := []boundFamily{{BoundRecentPeak, 1, false}, {BoundRecentPeak, 1, true}}
	for _, parts := range BoundParts {
		refs = append(refs, boundFamily{BoundPartPeak, parts, false})
	}
	refs = append(refs, boundFamily{BoundHindsightMargin, 1, false}, boundFamily{BoundForwardMargin, 1, true}, boundFamily{BoundOracle, 1, false})
	for i, r := range refs {
		name := "ref: " + r.rule
		switch {
		case r.rule == BoundPartPeak:
			name = fmt.Sprintf("ref: %s, %d parts", r.rule, r.parts)
		case r.answered:
			name += ", kills answered"
		}
		l := replay.Line{Name: name, Color: boundColors[i%len(boundColors)], Markers: true, Connect: r.rule != BoundOracle}
		for _, b := range boundFront(a, r) {
			if b.OOMFreeFraction >= replay.FrontierMinOOMFree {
				l.X, l.Y = append(l.X, 100*b.OOMFreeFraction), append(l.Y, b.MemorySlackMean)
			}
		}
		if len(l.X) > 0 {
			lines = append(lines, l)
		}
	}
	return lines
}

// boundColors are the colours of the reference rules' fronts, apart from the
// estimators' palette.
var boundColors = []string{"#bcbd22", "#637939", "#8c6d31", "#843c39", "#e377c2", "#7b4173", "#393b79"}

// LeanestBound returns, for every rule (and every number of parts of
// the oracle and part-peak), the point of lowest mean memory slack among
// those with at least minOOMFree OOM-free days, in rule order (the oracle
// and its parts, recent-peak and with kills answered, part-peak's parts,
// hindsight-margin and forward-margin, each also with kills answered);
// rules with no such point are left out.
func LeanestBound(points []BoundPoint, minOOMFree float64) []BoundPoint {
	best := map[boundFamily]BoundPoint{}
	for _, p := range points {
		k := p.family()
		if b, ok := best[k]; p.OOMFreeFraction >= minOOMFree && (!ok || p.MemorySlackMean < b.MemorySlackMean) {
			best[k] = p
		}
	}
	order := []boundFamily{{BoundOracle, 1, false}}
	for _, parts := range BoundParts {
		order = append(order, boundFamily{BoundOracle, parts, false})
	}
	order = append(order, boundFamily{BoundRecentPeak, 1, false}, boundFamily{BoundRecentPeak, 1, true})
	for _, parts := range BoundParts {
		order = append(order, boundFamily{BoundPartPeak, parts, false})
	}
	order = append(order, boundFamily{BoundHindsightMargin, 1, false}, boundFamily{BoundHindsightMargin, 1, true},
		boundFamily{BoundForwardMargin, 1, false}, boundFamily{BoundForwardMargin, 1, true})
	var out []BoundPoint
	for _, k := range order {
		if b, ok := best[k]; ok {
			out = append(out, b)
		}
	}
	return out
}

// boundFamily is one rule with one number of parts of the day, its kills
// answered or not: the points LeanestBound picks one from, and one front of
// frontier.svg.
type boundFamily struct {
	rule     string
	parts    int
	answered bool
}

func (p BoundPoint) family() boundFamily { return boundFamily{p.Rule, p.Parts, p.Answered} }

// boundFront returns the Pareto front of the points of family f (see
// ParetoFront), by increasing OOM-free fraction.
func boundFront(points []BoundPoint, f boundFamily) []BoundPoint {
	var s []BoundPoint
	for _, p := range points {
		if p.family() == f {
			s = append(s, p)
		}
	}
	return replay.ParetoFrontFunc(s, func(p BoundPoint) (float64, float64) { return p.OOMFreeFraction, p.MemorySlackMean })
}

// WriteBoundsCSV writes one row per point.
func WriteBoundsCSV(w io.Writer, points []BoundPoint) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"rule", "horizon_days", "margin", "penalty", "workload_days", "memory_slack_mean", "memory_slack_median", "oom_free_fraction", "day_parts", "kills_answered"}); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, p := range points {
		if err := cw.Write([]string{p.Rule, strconv.Itoa(p.Horizon), g(p.Margin), g(p.Penalty), strconv.Itoa(p.WorkloadDays),
			f(p.MemorySlackMean), f(p.MemorySlackMedian), f(p.OOMFreeFraction), strconv.Itoa(p.Parts), strconv.FormatBool(p.Answered)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
