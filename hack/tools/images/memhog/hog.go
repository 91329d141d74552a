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
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

// hog holds memory mapped outside the Go heap, so the garbage collector
// neither counts nor moves it, and every page is written once it is mapped.
type hog struct {
	pageSize int64
	chunks   [][]byte
	// total is the memory held, in bytes: whole pages.
	total int64
}

func newHog() *hog { return &hog{pageSize: int64(os.Getpagesize())} }

// grow maps n more bytes (rounded up to whole pages) and writes every page.
func (h *hog) grow(n int64) error {
	size := (n + h.pageSize - 1) / h.pageSize * h.pageSize
	b, err := mapAnonymous(size)
	if err != nil {
		return fmt.Errorf("mapping %s: %w", formatBytes(size), err)
	}
	touch(b, h.pageSize)
	h.chunks = append(h.chunks, b)
	h.total += size
	return nil
}

// mapAnonymous maps size bytes of private anonymous memory. Until it is
// written, no page of it is resident.
func mapAnonymous(size int64) ([]byte, error) {
	return syscall.Mmap(-1, 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
}

// touch writes a byte into every page of b, so the kernel backs each with
// real memory (a read alone would map the shared zero page).
func touch(b []byte, pageSize int64) {
	for off := int64(0); off < int64(len(b)); off += pageSize {
		b[off] = 0xa5
	}
}

// burnPeriod is the cycle of a CPU burner: busy for its duty, asleep for the
// rest. Short enough that a cgroup's CFS period (100ms) sees a steady load.
const burnPeriod = 20 * time.Millisecond

// split spreads milliCPU over whole-core workers: the fewest workers that can
// carry it, each busy the same fraction of the time.
func split(milliCPU int64) (workers int, duty float64) {
	if milliCPU <= 0 {
		return 0, 0
	}
	workers = int((milliCPU + 999) / 1000)
	return workers, float64(milliCPU) / float64(int64(workers)*1000)
}

// burner keeps one core busy for duty of every period.
type burner struct {
	period time.Duration
	duty   float64
	now    func() time.Time
	sleep  func(context.Context, time.Duration)
}

func newBurner(duty float64) burner {
	return burner{period: burnPeriod, duty: duty, now: time.Now, sleep: sleepCtx}
}

func (b burner) run(ctx context.Context) {
	for ctx.Err() == nil {
		b.cycle(ctx)
	}
}

// cycle spins for the busy part of one period and sleeps for the rest.
func (b burner) cycle(ctx context.Context) {
	busy := time.Duration(float64(b.period) * b.duty)
	start := b.now()
	for b.now().Sub(start) < busy {
	}
	if rest := b.period - busy; rest > 0 {
		b.sleep(ctx, rest)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

var (
	bytesRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$`)
	cpuRE   = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(m)?$`)
)

var byteSuffixes = map[string]float64{
	"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
	"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
}

// parseBytes reads a memory quantity, e.g. 200Mi, 1.5Gi, 500M or 1048576.
func parseBytes(s string) (int64, error) {
	m := bytesRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("memory quantity %q: want a number with an optional suffix Ki, Mi, Gi, Ti, k, M, G or T", s)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, err
	}
	return int64(math.Ceil(v * byteSuffixes[m[2]])), nil
}

// parseMilliCPU reads a CPU quantity in millicores, e.g. 250m or 1.5.
func parseMilliCPU(s string) (int64, error) {
	m := cpuRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("cpu quantity %q: want cores (1.5) or millicores (1500m)", s)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, err
	}
	if m[2] == "" {
		v *= 1000
	}
	return int64(math.Ceil(v)), nil
}

// formatBytes writes n in the largest binary unit that divides it.
func formatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
