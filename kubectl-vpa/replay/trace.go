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
	"bufio"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openvpa/openvpa/recommender/input/history"
)

// Trace column names of the native format.
const (
	ColTimestamp     = "timestamp"
	ColWorkload      = "workload"
	ColContainer     = "container"
	ColCPU           = "cpu_cores"
	ColMemory        = "memory_bytes"
	ColCPURequest    = "cpu_request_cores"
	ColMemoryRequest = "memory_request_bytes"
)

// Input formats accepted by ReadTrace.
const (
	// FormatNative is the trace format of docs/replay.md.
	FormatNative = "csv"
	// FormatBitbrains is the derived Bitbrains GWA-T-12 format
	// vm_id,timestamp_s,cpu_cores,cpu_capacity_mhz,cpu_usage_mhz,mem_capacity_kb,mem_usage_kb.
	FormatBitbrains = "bitbrains"
)

// Formats lists the input formats ReadTrace understands.
var Formats = []string{FormatNative, FormatBitbrains}

// Sample is one usage measurement of one container.
type Sample struct {
	// Time is when the sample was taken.
	Time time.Time
	// CPU is the CPU usage in cores.
	CPU float64
	// Memory is the memory usage in bytes.
	Memory float64
	// CPURequest and MemoryRequest are the provisioned requests in force at
	// Time (cores, bytes); zero when the trace has no request columns.
	CPURequest    float64
	MemoryRequest float64
}

// Container is the time-ordered samples of one container of a workload.
type Container struct {
	Name    string
	Samples []Sample
}

// Workload is one replayed pod: a VPA target whose containers share the
// updater's decisions.
type Workload struct {
	Name       string
	Containers []*Container
	// Pods are the histories of the workload's pods, each container's CPU
	// and memory points apart, when the workload was read from Prometheus
	// (PrometheusSource.Load), sorted by name; nil for a trace file, whose
	// containers are all there is. Recommender.Recommend feeds them as the
	// recommender does; the replay itself runs Containers.
	Pods []*history.Pod
}

// Start returns the time of the workload's first sample.
func (w *Workload) Start() time.Time {
	var t0 time.Time
	for _, c := range w.Containers {
		if len(c.Samples) > 0 && (t0.IsZero() || c.Samples[0].Time.Before(t0)) {
			t0 = c.Samples[0].Time
		}
	}
	return t0
}

// End returns the time of the workload's last sample.
func (w *Workload) End() time.Time {
	var t1 time.Time
	for _, c := range w.Containers {
		if n := len(c.Samples); n > 0 && c.Samples[n-1].Time.After(t1) {
			t1 = c.Samples[n-1].Time
		}
	}
	return t1
}

// Trace is a parsed usage trace.
type Trace struct {
	// Workloads in order of first appearance in the input.
	Workloads []*Workload
	// HasRequests reports whether the trace carries provisioned requests.
	HasRequests bool
	// Rows is the number of data rows read.
	Rows int
	// Duplicates is the number of rows dropped because their container
	// already had a sample with exactly the same timestamp.
	Duplicates int
	// Unprovisioned is the number of Bitbrains rows dropped because the VM
	// had zero cores or zero capacity (not provisioned yet).
	Unprovisioned int
}

// Samples returns the number of samples kept.
func (t *Trace) Samples() int {
	n := 0
	for _, w := range t.Workloads {
		for _, c := range w.Containers {
			n += len(c.Samples)
		}
	}
	return n
}

// LineError is a problem with one line of a trace.
type LineError struct {
	Name string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Name, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// OpenTrace reads the trace in file, gunzipping it when it starts with the
// gzip magic bytes.
func OpenTrace(file, format string) (*Trace, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadTrace(f, file, format)
}

// ReadTrace parses a trace from r in the given format (FormatNative when
// empty). Gzip input is detected by its magic bytes. name labels errors.
func ReadTrace(r io.Reader, name, format string) (*Trace, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	p := &parser{name: name, trace: &Trace{}, containers: map[[2]string]*Container{}, workloads: map[string]*Workload{}}
	var err error
	switch format {
	case FormatNative, "":
		err = p.readNative(br)
	case FormatBitbrains:
		err = p.readBitbrains(br)
	default:
		return nil, fmt.Errorf("unknown input format %q (known: %s)", format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return nil, err
	}
	if p.trace.Samples() == 0 {
		return nil, fmt.Errorf("%s: no samples", name)
	}
	return p.trace, nil
}

type parser struct {
	name       string
	trace      *Trace
	containers map[[2]string]*Container
	workloads  map[string]*Workload
}

func (p *parser) lineErr(line int, format string, args ...any) error {
	return &LineError{Name: p.name, Line: line, Err: fmt.Errorf(format, args...)}
}

// records iterates over CSV records, reporting each with its line number.
func (p *parser) records(r io.Reader, each func(line int, rec []string) error) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return &LineError{Name: p.name, Line: pe.Line, Err: pe.Err}
			}
			return fmt.Errorf("%s: %w", p.name, err)
		}
		line, _ := cr.FieldPos(0)
		if err := each(line, rec); err != nil {
			return err
		}
	}
}

func (p *parser) readNative(r io.Reader) error {
	var idx map[string]int
	width := 0
	return p.records(r, func(line int, rec []string) error {
		if idx == nil {
			var err error
			if idx, err = nativeHeader(rec); err != nil {
				return p.lineErr(line, "%v", err)
			}
			width = len(rec)
			_, p.trace.HasRequests = idx[ColMemoryRequest]
			return nil
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			return nil
		}
		if len(rec) != width {
			return p.lineErr(line, "%d fields, the header has %d", len(rec), width)
		}
		p.trace.Rows++
		t, err := parseTimestamp(rec[idx[ColTimestamp]])
		if err != nil {
			return p.lineErr(line, "%s: %v", ColTimestamp, err)
		}
		workload, container := strings.TrimSpace(rec[idx[ColWorkload]]), strings.TrimSpace(rec[idx[ColContainer]])
		if workload == "" || container == "" {
			return p.lineErr(line, "empty workload or container name")
		}
		s := Sample{Time: t}
		fields := []struct {
			col string
			dst *float64
		}{{ColCPU, &s.CPU}, {ColMemory, &s.Memory}, {ColCPURequest, &s.CPURequest}, {ColMemoryRequest, &s.MemoryRequest}}
		for _, f := range fields {
			i, ok := idx[f.col]
			if !ok {
				continue
			}
			if *f.dst, err = parseAmount(rec[i]); err != nil {
				return p.lineErr(line, "%s: %v", f.col, err)
			}
		}
		return p.add(line, workload, container, s)
	})
}

func nativeHeader(rec []string) (map[string]int, error) {
	idx := map[string]int{}
	for i, name := range rec {
		name = strings.TrimSpace(strings.TrimPrefix(name, "\ufeff"))
		switch name {
		case ColTimestamp, ColWorkload, ColContainer, ColCPU, ColMemory, ColCPURequest, ColMemoryRequest:
		default:
			return nil, fmt.Errorf("missing header: expected %s,%s,%s,%s,%s[,%s,%s], got unknown column %q",
				ColTimestamp, ColWorkload, ColContainer, ColCPU, ColMemory, ColCPURequest, ColMemoryRequest, name)
		}
		if _, dup := idx[name]; dup {
			return nil, fmt.Errorf("column %q appears twice in the header", name)
		}
		idx[name] = i
	}
	for _, c := range []string{ColTimestamp, ColWorkload, ColContainer, ColCPU, ColMemory} {
		if _, ok := idx[c]; !ok {
			return nil, fmt.Errorf("missing header column %q", c)
		}
	}
	_, cpu := idx[ColCPURequest]
	_, mem := idx[ColMemoryRequest]
	if cpu != mem {
		return nil, fmt.Errorf("header needs both %s and %s, or neither", ColCPURequest, ColMemoryRequest)
	}
	return idx, nil
}

// Bitbrains derived-file columns.
var bitbrainsHeader = []string{"vm_id", "timestamp_s", "cpu_cores", "cpu_capacity_mhz", "cpu_usage_mhz", "mem_capacity_kb", "mem_usage_kb"}

// readBitbrains converts the derived Bitbrains format: one workload per VM
// ("vm-<id>") with one container ("vm"); CPU cores = usage MHz /
// (capacity MHz / cores); memory bytes = usage KB × 1024; requests = cores and
// capacity KB × 1024. Rows with zero cores or zero capacity are dropped and
// counted in Unprovisioned.
func (p *parser) readBitbrains(r io.Reader) error {
	header := false
	p.trace.HasRequests = true
	var v [6]float64
	return p.records(r, func(line int, rec []string) error {
		if !header {
			if len(rec) != len(bitbrainsHeader) {
				return p.lineErr(line, "missing header: expected %s", strings.Join(bitbrainsHeader, ","))
			}
			for i, c := range bitbrainsHeader {
				if strings.TrimSpace(rec[i]) != c {
					return p.lineErr(line, "missing header: expected %s", strings.Join(bitbrainsHeader, ","))
				}
			}
			header = true
			return nil
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			return nil
		}
		if len(rec) != len(bitbrainsHeader) {
			return p.lineErr(line, "%d fields, the header has %d", len(rec), len(bitbrainsHeader))
		}
		p.trace.Rows++
		vm := strings.TrimSpace(rec[0])
		if vm == "" {
			return p.lineErr(line, "empty vm_id")
		}
		for i := range v {
			var err error
			if v[i], err = parseAmount(rec[i+1]); err != nil {
				return p.lineErr(line, "%s: %v", bitbrainsHeader[i+1], err)
			}
		}
		ts, cores, capMHz, useMHz, capKB, useKB := v[0], v[1], v[2], v[3], v[4], v[5]
		if cores == 0 || capMHz == 0 || capKB == 0 {
			p.trace.Unprovisioned++
			return nil
		}
		s := Sample{
			Time:          unixTime(ts),
			CPU:           useMHz / (capMHz / cores),
			Memory:        useKB * 1024,
			CPURequest:    cores,
			MemoryRequest: capKB * 1024,
		}
		return p.add(line, "vm-"+vm, "vm", s)
	})
}

// add appends s to its container, enforcing time order and dropping exact
// duplicate timestamps.
func (p *parser) add(line int, workload, container string, s Sample) error {
	key := [2]string{workload, container}
	c := p.containers[key]
	if c == nil {
		w := p.workloads[workload]
		if w == nil {
			w = &Workload{Name: workload}
			p.workloads[workload] = w
			p.trace.Workloads = append(p.trace.Workloads, w)
		}
		c = &Container{Name: container}
		w.Containers = append(w.Containers, c)
		p.containers[key] = c
	}
	if n := len(c.Samples); n > 0 {
		last := c.Samples[n-1].Time
		switch {
		case s.Time.Equal(last):
			p.trace.Duplicates++
			return nil
		case s.Time.Before(last):
			return p.lineErr(line, "timestamp %s of %s/%s goes backwards (previous sample at %s)",
				s.Time.UTC().Format(time.RFC3339), workload, container, last.UTC().Format(time.RFC3339))
		}
	}
	c.Samples = append(c.Samples, s)
	return nil
}

// parseAmount parses a finite, non-negative number.
func parseAmount(s string) (float64, error) {
	s = strings.TrimSpace(s)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("cannot parse %q as a number", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a finite number", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("negative value %s", s)
	}
	return v, nil
}

// parseTimestamp accepts Unix seconds (fractions allowed) or RFC 3339.
func parseTimestamp(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, errors.New("empty timestamp")
	}
	if c := s[0]; c >= '0' && c <= '9' && !strings.ContainsAny(s, "T:-") {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(v, 0) || v > 1e12 {
			return time.Time{}, fmt.Errorf("cannot parse %q as Unix seconds or RFC 3339", s)
		}
		return unixTime(v), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("cannot parse %q as Unix seconds or RFC 3339", s)
	}
	return t, nil
}

func unixTime(sec float64) time.Time {
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(math.Round(frac*1e9))).UTC()
}

// medianInterval returns the median gap between consecutive samples, or
// def when there are fewer than two samples.
func medianInterval(samples []Sample, def time.Duration) time.Duration {
	if len(samples) < 2 {
		return def
	}
	gaps := make([]time.Duration, len(samples)-1)
	for i := 1; i < len(samples); i++ {
		gaps[i-1] = samples[i].Time.Sub(samples[i-1].Time)
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	return gaps[len(gaps)/2]
}
