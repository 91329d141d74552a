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
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// sample is one scrape of a /metrics page: "name{labels}" (labels as
// printed) to value. Histogram buckets are left out.
type sample map[string]float64

// parseExposition reads the Prometheus text exposition format.
func parseExposition(r io.Reader) (sample, error) {
	s := sample{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || strings.Contains(line, "_bucket{") {
			continue
		}
		// The value follows the series, after the closing brace if any;
		// an optional timestamp follows the value.
		rest := line
		series := ""
		if i := strings.LastIndexByte(line, '}'); i >= 0 {
			series, rest = line[:i+1], line[i+1:]
		} else if i := strings.IndexByte(line, ' '); i >= 0 {
			series, rest = line[:i], line[i:]
		} else {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		s[series] = v
	}
	return s, sc.Err()
}

// byLabel returns the series of metric by the value of one label, e.g. the
// policy controller's writes by verb. Series without the label are left out.
func (s sample) byLabel(metric, label string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range s {
		rest, ok := strings.CutPrefix(k, metric+"{")
		if !ok {
			continue
		}
		labels, err := parseLabels(strings.TrimSuffix(rest, "}"))
		if err != nil {
			continue
		}
		if lv, ok := labels[label]; ok {
			out[lv] += v
		}
	}
	return out
}

// parseLabels reads `a="x",b="y"` (quoted values with \" \\ \n escapes).
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return nil, fmt.Errorf("label pair without a value: %q", s)
		}
		name := strings.TrimSpace(s[:eq])
		s = strings.TrimLeft(s[eq+1:], " ")
		if s == "" || s[0] != '"' {
			return nil, fmt.Errorf("label %s without a quoted value", name)
		}
		var val strings.Builder
		i := 1
		closed := false
		for ; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(s[i])
				}
				continue
			}
			if c == '"' {
				closed = true
				break
			}
			val.WriteByte(c)
		}
		if !closed {
			return nil, fmt.Errorf("unterminated value of label %s", name)
		}
		out[name] = val.String()
		s = strings.TrimSpace(s[i+1:])
		s = strings.TrimSpace(strings.TrimPrefix(s, ","))
	}
	return out, nil
}

// delta returns after - before for every key of either, leaving out zeros.
func delta(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	for k, v := range before {
		if _, ok := after[k]; !ok && v != 0 {
			out[k] = -v
		}
	}
	return out
}

// formatCounts prints counts sorted by key, "none" when empty.
func formatCounts(m map[string]float64) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%g", k, m[k])
	}
	return strings.Join(parts, " ")
}

// parseVmRSS returns the resident set of a /proc/<pid>/status, in bytes.
func parseVmRSS(status string) (float64, error) {
	for line := range strings.SplitSeq(status, "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("unexpected VmRSS line %q", line)
		}
		kb, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("VmRSS: %w", err)
		}
		return kb * 1024, nil
	}
	return 0, errors.New("no VmRSS line")
}

// stats summarises a series of samples.
type stats struct {
	n                    int
	min, mean, max, last float64
}

func summarize(xs []float64) stats {
	if len(xs) == 0 {
		return stats{}
	}
	s := stats{n: len(xs), min: math.Inf(1), max: math.Inf(-1), last: xs[len(xs)-1]}
	var sum float64
	for _, x := range xs {
		sum += x
		s.min = math.Min(s.min, x)
		s.max = math.Max(s.max, x)
	}
	s.mean = sum / float64(len(xs))
	return s
}

// mb prints bytes as MB (10^6).
func mb(b float64) string { return fmt.Sprintf("%.1f MB", b/1e6) }

// verdict compares the time to make n writes with n/qps, the time the
// client's rate limiter allows.
type verdict struct {
	ideal time.Duration
	// floor is (n - burst) / qps: the burst goes at once, so no client
	// can be faster.
	floor time.Duration
	// ratio is elapsed / ideal.
	ratio float64
	// within is true when ratio is within tolerance of 1.
	within bool
}

func judge(elapsed time.Duration, n, burst int, qps, tolerance float64) verdict {
	if n <= 0 || qps <= 0 {
		return verdict{}
	}
	ideal := time.Duration(float64(n) / qps * float64(time.Second))
	floor := time.Duration(float64(max(n-burst, 0)) / qps * float64(time.Second))
	r := elapsed.Seconds() / ideal.Seconds()
	return verdict{ideal: ideal, floor: floor, ratio: r, within: math.Abs(r-1) <= tolerance}
}

// perWorkload divides a memory figure among n workloads.
func perWorkload(bytes float64, n int) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f KB", bytes/float64(n)/1e3)
}

// versionChanges compares two maps of object to resource version.
func versionChanges(before, after map[string]string) (changed, added, removed int) {
	for k, v := range after {
		old, ok := before[k]
		switch {
		case !ok:
			added++
		case old != v:
			changed++
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			removed++
		}
	}
	return changed, added, removed
}
