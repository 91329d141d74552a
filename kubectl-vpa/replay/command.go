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

package replay

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/openvpa/openvpa/recommender/estimator"
)

// Usage is the help of `kubectl vpa replay` above its flags.
const Usage = "Usage: kubectl vpa replay --trace FILE [--estimator NAME] [--out DIR] [flags]\n" +
	"       kubectl vpa replay --prometheus-url URL -n NAMESPACE (KIND/NAME | --pod-selector SELECTOR) [flags]\n\n" +
	"Replays a usage trace, or a workload's history in Prometheus, through the recommender's model, an estimator and the updater's rule, and\n" +
	"scores the requests it would have set (docs/replay.md).\n"

// Run executes `kubectl vpa replay` with args (without the command name):
// it replays the trace, writes the report files to --out and prints a
// summary table on stdout; progress goes to stderr.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return RunCommand(ctx, NewCommandOptions(), Usage, args, stdout, stderr)
}

// RunCommand parses args into o and runs it; usage is printed above the
// flags for --help. A tool that builds on the replay passes its own
// options (with Analyses) and usage.
func RunCommand(ctx context.Context, o *CommandOptions, usage string, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("replay", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	o.AddFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "%s\nFlags:\n%s", usage, fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if o.Prometheus.Enabled() && fs.NArg() == 1 {
		o.Prometheus.Workload = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v (a KIND/NAME argument goes with --prometheus-url)", fs.Args())
	}
	if err := o.Validate(); err != nil {
		return err
	}
	return o.Run(ctx, stdout, stderr)
}

// Run replays with the options: --trace, then --holdout when given, each
// into its own report directory.
func (o *CommandOptions) Run(ctx context.Context, stdout, stderr io.Writer) error {
	start := time.Now()
	// The chosen estimator first, then every other one at its defaults for
	// comparison.
	names := []string{o.Estimator}
	if names[0] == "" {
		names[0] = estimator.PercentileName
	}
	for _, n := range estimator.Names() {
		if n != names[0] {
			names = append(names, n)
		}
	}
	var ests []estimator.Estimator
	for i, n := range names {
		opts := estimator.DefaultOptions()
		if i == 0 {
			opts = o.Estimators
		}
		e, err := estimator.New(n, opts)
		if err != nil {
			return err
		}
		ests = append(ests, e)
	}
	model := o.Model
	base := Options{Model: &model, Estimators: ests, OOMFeedback: o.OOMFeedback, ZeroMemoryAsMissing: o.ZeroMemoryAsMissing,
		Rule: NewUpdateRule(o.PodUpdateThreshold, o.PodLifetimeUpdateThreshold, o.EvictAfterOOMThreshold)}
	if o.Prometheus.Enabled() {
		start := time.Now()
		trace, st, err := o.Prometheus.Load(ctx)
		if err != nil {
			return err
		}
		name := o.Prometheus.Name()
		if !o.Quiet {
			st.print(stderr, name, trace, time.Since(start))
		}
		if err := o.replayTrace(ctx, name, trace, o.Out, base, stdout, stderr); err != nil {
			return err
		}
	} else if err := o.runTrace(ctx, o.Trace, o.Out, base, stdout, stderr); err != nil {
		return err
	}
	if o.Holdout != "" {
		fmt.Fprintln(stdout)
		if err := o.runTrace(ctx, o.Holdout, filepath.Join(o.Out, "holdout"), base, stdout, stderr); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\ndone in %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// runTrace replays one trace and writes its report to out.
func (o *CommandOptions) runTrace(ctx context.Context, file, out string, base Options, stdout, stderr io.Writer) error {
	start := time.Now()
	trace, err := OpenTrace(file, o.InputFormat)
	if err != nil {
		return err
	}
	if !o.Quiet {
		fmt.Fprintf(stderr, "read %s: %d rows, %d samples, %d workloads, %d duplicate timestamps dropped", file, trace.Rows, trace.Samples(), len(trace.Workloads), trace.Duplicates)
		if trace.Unprovisioned > 0 {
			fmt.Fprintf(stderr, ", %d unprovisioned rows dropped", trace.Unprovisioned)
		}
		fmt.Fprintf(stderr, " (%s)\n", time.Since(start).Round(time.Millisecond))
	}
	return o.replayTrace(ctx, file, trace, out, base, stdout, stderr)
}

// replayTrace replays a trace read from name and writes its report to out.
func (o *CommandOptions) replayTrace(ctx context.Context, file string, trace *Trace, out string, base Options, stdout, stderr io.Writer) error {
	start := time.Now()
	opts := base
	opts.Progress = o.progress(stderr, "replay")
	res, err := Replay(ctx, trace, opts)
	if err != nil {
		return err
	}
	var sweep []SweepPoint
	if o.Sweep {
		opts.Progress = o.progress(stderr, "sweep")
		if sweep, err = RunSweep(ctx, trace, opts); err != nil {
			return err
		}
	}
	var analyses []Analysis
	for _, analyze := range o.Analyses {
		a, err := analyze(ctx, trace)
		if err != nil {
			return err
		}
		analyses = append(analyses, a)
	}
	// The recommendation after the history, for one workload's (a
	// workload's history from Prometheus, typically): what a VPA created
	// now would get, and what kubectl vpa export writes without one.
	var rec *RecommendationReport
	if len(trace.Workloads) == 1 {
		r, err := o.Recommender()
		if err != nil {
			return err
		}
		rr := r.Report(trace.Workloads[0])
		rec = &rr
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	files, err := o.writeReport(out, res, sweep, analyses)
	if err != nil {
		return err
	}
	if rec != nil {
		data, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, RecommendationFile), append(data, '\n'), 0o644); err != nil {
			return err
		}
		files = append(files, RecommendationFile)
	}
	printTable(stdout, file, res)
	for _, a := range analyses {
		a.Print(stdout)
	}
	if rec != nil {
		rec.Print(stdout)
	}
	fmt.Fprintf(stdout, "\nwrote %s (summary.json, days.csv, worst.svg, typical.svg, frontier.svg", out)
	if o.Sweep {
		fmt.Fprint(stdout, ", sweep.csv")
	}
	for _, f := range files {
		fmt.Fprint(stdout, ", "+f)
	}
	fmt.Fprintf(stdout, ") in %s\n", time.Since(start).Round(time.Millisecond))
	return nil
}

func (o *CommandOptions) progress(stderr io.Writer, what string) func(done, total int) {
	if o.Quiet {
		return nil
	}
	last := time.Now()
	return func(done, total int) {
		if done == total || time.Since(last) > 2*time.Second {
			last = time.Now()
			fmt.Fprintf(stderr, "%s: %d/%d workloads\n", what, done, total)
		}
	}
}

// ReportSummary is the content of summary.json.
type ReportSummary struct {
	Estimator   Summary  `json:"estimator"`
	Provisioned *Summary `json:"provisioned,omitempty"`
}

// writeReport writes the report files to out, the analyses' among them,
// and returns the names of the analyses' files.
func (o *CommandOptions) writeReport(out string, res *Result, sweep []SweepPoint, analyses []Analysis) ([]string, error) {
	sum := ReportSummary{Estimator: res.EstimatorSummary(0)}
	if res.HasProvisioned {
		p := res.ProvisionedSummary()
		sum.Provisioned = &p
	}
	data, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(out, "summary.json"), append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := writeFile(filepath.Join(out, "days.csv"), func(w io.Writer) error { return WriteDaysCSV(w, res) }); err != nil {
		return nil, err
	}
	worst, typical := PickWorkloads(res)
	for file, tl := range map[string]*Timeline{"worst.svg": worst, "typical.svg": typical} {
		if tl == nil {
			continue
		}
		kind := "worst"
		if file == "typical.svg" {
			kind = "typical"
		}
		p := TimelinePlot(tl, fmt.Sprintf("%s workload %s: memory usage vs %s request", kind, tl.Workload, res.Estimators[0]))
		if err := writeFile(filepath.Join(out, file), p.WriteSVG); err != nil {
			return nil, err
		}
	}
	if len(sweep) > 0 {
		if err := writeFile(filepath.Join(out, "sweep.csv"), func(w io.Writer) error { return WriteSweepCSV(w, sweep) }); err != nil {
			return nil, err
		}
	}
	var files []string
	frontier := FrontierPlot(res, sweep)
	for _, a := range analyses {
		names, err := a.WriteFiles(out)
		if err != nil {
			return nil, err
		}
		files = append(files, names...)
		frontier.Lines = append(frontier.Lines, a.FrontierLines()...)
	}
	return files, writeFile(filepath.Join(out, "frontier.svg"), frontier.WriteSVG)
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// WriteDaysCSV writes one row per scored workload-day for the primary
// estimator, with the provisioned baseline's columns when present.
func WriteDaysCSV(w io.Writer, res *Result) error {
	cw := csv.NewWriter(w)
	header := []string{"workload", "container", "day", "start", "samples", "cpu_usage_p95", "memory_usage_p95", "memory_usage_max",
		"cpu_request_mean", "memory_request_mean", "cpu_slack", "memory_slack", "oom_samples", "cpu_shortfall", "changes"}
	if res.HasProvisioned {
		header = append(header, "provisioned_cpu_request_mean", "provisioned_memory_request_mean", "provisioned_cpu_slack",
			"provisioned_memory_slack", "provisioned_oom_samples", "provisioned_cpu_shortfall")
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	for _, d := range res.Days {
		s := d.Scores[0]
		row := []string{d.Workload, d.Container, strconv.Itoa(d.Day), d.Start.UTC().Format(time.RFC3339), strconv.Itoa(d.Samples),
			f(d.CPUUsageP95), f(d.MemoryUsageP95), f(d.MemoryUsageMax), f(s.CPURequestMean), f(s.MemoryRequestMean),
			f(s.CPUSlack), f(s.MemorySlack), strconv.Itoa(s.OOMSamples), f(s.CPUShortfall), strconv.Itoa(s.Changes)}
		if p := d.Provisioned; p != nil {
			row = append(row, f(p.CPURequestMean), f(p.MemoryRequestMean), f(p.CPUSlack), f(p.MemorySlack), strconv.Itoa(p.OOMSamples), f(p.CPUShortfall))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func printTable(w io.Writer, trace string, res *Result) {
	fmt.Fprintf(w, "%s: %d scored workload-days from %d workloads\n\n", trace, len(res.Days), res.ScoredWorkloads())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "requests\tdays\tmem slack mean\tmedian\tOOM-free\tcpu slack mean\tmedian\tcpu shortfall\tchanges/day mean\tp99\t")
	row := func(name string, s Summary) {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.1f%%\t%.3f\t%.3f\t%.1f%%\t%.2f\t%.0f\t\n", name, s.WorkloadDays, s.MemorySlackMean, s.MemorySlackMedian,
			100*s.OOMFreeFraction, s.CPUSlackMean, s.CPUSlackMedian, 100*s.CPUShortfallMean, s.ChangesPerDayMean, s.ChangesPerDayP99)
	}
	for i, n := range res.Estimators {
		if i == 0 {
			n += " (scored)"
		}
		row(n, res.EstimatorSummary(i))
	}
	if res.HasProvisioned {
		row("provisioned", res.ProvisionedSummary())
	}
	tw.Flush()
}

// PickWorkloads returns the timelines of the worst workload (most days with
// an OOM, then most OOM samples) and of a typical one (mean memory slack
// nearest the median over workloads) for the primary estimator.
func PickWorkloads(res *Result) (worst, typical *Timeline) {
	type agg struct {
		oomDays, oomSamples int
		slack               float64
		days                int
	}
	per := map[string]*agg{}
	var order []string
	for _, d := range res.Days {
		a := per[d.Workload]
		if a == nil {
			a = &agg{}
			per[d.Workload] = a
			order = append(order, d.Workload)
		}
		s := d.Scores[0]
		if s.OOMSamples > 0 {
			a.oomDays++
		}
		a.oomSamples += s.OOMSamples
		a.slack += s.MemorySlack
		a.days++
	}
	if len(order) == 0 {
		return nil, nil
	}
	byName := map[string]*Timeline{}
	for _, tl := range res.Workloads {
		byName[tl.Workload] = tl
	}
	w := order[0]
	for _, n := range order[1:] {
		a, b := per[n], per[w]
		if a.oomDays > b.oomDays || (a.oomDays == b.oomDays && a.oomSamples > b.oomSamples) {
			w = n
		}
	}
	slacks := make([]float64, 0, len(order))
	for _, n := range order {
		slacks = append(slacks, per[n].slack/float64(per[n].days))
	}
	med := Median(slacks)
	t := order[0]
	for _, n := range order {
		if d := per[n].slack/float64(per[n].days) - med; abs(d) < abs(per[t].slack/float64(per[t].days)-med) {
			t = n
		}
	}
	return byName[w], byName[t]
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TimelinePlot draws memory usage and the request in force over time (days
// from the workload's start) for the first container of tl, at most ~1500
// points per line (usage keeps each bucket's maximum).
func TimelinePlot(tl *Timeline, title string) *Plot {
	c := tl.Containers[0]
	t0 := c.Samples[0].Time
	for _, cc := range tl.Containers {
		if len(cc.Samples) > 0 && cc.Samples[0].Time.Before(t0) {
			t0 = cc.Samples[0].Time
		}
	}
	step := max(1, len(c.Samples)/1500)
	usage := Line{Name: "memory usage (GiB)", Color: "#1f77b4"}
	req := Line{Name: "memory request (GiB)", Color: "#d62728", Step: true}
	const gib = 1 << 30
	for i := 0; i < len(c.Samples); i += step {
		hi := min(i+step, len(c.Samples))
		peak := 0.0
		for _, s := range c.Samples[i:hi] {
			peak = max(peak, s.Memory)
		}
		x := c.Samples[i].Time.Sub(t0).Hours() / 24
		usage.X, usage.Y = append(usage.X, x), append(usage.Y, peak/gib)
		req.X, req.Y = append(req.X, x), append(req.Y, tl.MemoryRequest[0][i]/gib)
	}
	return &Plot{Title: title, XLabel: "days since first sample", YLabel: "GiB", Lines: []Line{usage, req}}
}

// FrontierMinOOMFree is the lowest OOM-free fraction of the swept points
// FrontierPlot draws: settings that OOM on more days are of no interest, and
// their (unbounded) negative slack would squeeze the rest of the plot.
const FrontierMinOOMFree = 0.6

// FrontierPlot draws memory slack against OOM-free days for every estimator
// of res (default settings), the provisioned baseline, and the Pareto front
// of each swept estimator from FrontierMinOOMFree on.
func FrontierPlot(res *Result, sweep []SweepPoint) *Plot {
	p := &Plot{Title: fmt.Sprintf("memory slack vs OOM-free workload-days (sweep fronts from %.0f%%)", 100*FrontierMinOOMFree),
		XLabel: "OOM-free workload-days (%)", YLabel: "memory slack (mean)"}
	byEst := map[string][]SweepPoint{}
	var ests []string
	for _, s := range sweep {
		if _, ok := byEst[s.Estimator]; !ok {
			ests = append(ests, s.Estimator)
		}
		byEst[s.Estimator] = append(byEst[s.Estimator], s)
	}
	for i, e := range ests {
		front := ParetoFront(byEst[e])
		l := Line{Name: e + " sweep (front)", Color: palette[i%len(palette)], Markers: true, Connect: true}
		for _, s := range front {
			if s.Summary.OOMFreeFraction < FrontierMinOOMFree {
				continue
			}
			l.X, l.Y = append(l.X, 100*s.Summary.OOMFreeFraction), append(l.Y, s.Summary.MemorySlackMean)
		}
		p.Lines = append(p.Lines, l)
	}
	for i, n := range res.Estimators {
		s := res.EstimatorSummary(i)
		p.Lines = append(p.Lines, Line{Name: n + " default", Color: palette[(i+4)%len(palette)], Markers: true,
			X: []float64{100 * s.OOMFreeFraction}, Y: []float64{s.MemorySlackMean}})
	}
	if res.HasProvisioned {
		s := res.ProvisionedSummary()
		p.Lines = append(p.Lines, Line{Name: "provisioned", Color: "#000000", Markers: true, X: []float64{100 * s.OOMFreeFraction}, Y: []float64{s.MemorySlackMean}})
	}
	return p
}

// ParetoFront returns the points no other point beats on both axes (lower
// slack and more OOM-free days), by increasing OOM-free fraction.
func ParetoFront(points []SweepPoint) []SweepPoint {
	return ParetoFrontFunc(points, func(p SweepPoint) (float64, float64) {
		return p.Summary.OOMFreeFraction, p.Summary.MemorySlackMean
	})
}

// ParetoFrontFunc returns the points that no other beats on both of
// score's values (more OOM-free days, lower slack), by increasing OOM-free
// fraction.
func ParetoFrontFunc[T any](points []T, score func(T) (oomFree, slack float64)) []T {
	s := append([]T(nil), points...)
	sort.SliceStable(s, func(i, j int) bool {
		fi, si := score(s[i])
		fj, sj := score(s[j])
		if fi != fj {
			return fi > fj
		}
		return si < sj
	})
	var front []T
	last := 0.0
	for _, p := range s {
		if _, sl := score(p); len(front) == 0 || sl < last {
			front, last = append(front, p), sl
		}
	}
	for i, j := 0, len(front)-1; i < j; i, j = i+1, j-1 {
		front[i], front[j] = front[j], front[i]
	}
	return front
}
