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
	"bytes"
	"context"
	"log"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// With roleEnv set, the test binary is memhog itself, for the process test.
const roleEnv = "MEMHOG_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(roleEnv) == "1" {
		os.Args = append([]string{"memhog"}, strings.Fields(os.Getenv("MEMHOG_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// resident reports, per page of b, whether it is in memory (mincore(2)).
func resident(t *testing.T, b []byte, pageSize int64) []bool {
	t.Helper()
	vec := make([]byte, (int64(len(b))+pageSize-1)/pageSize)
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	out := make([]bool, len(vec))
	for i, v := range vec {
		out[i] = v&1 == 1
	}
	return out
}

func count(pages []bool) int {
	n := 0
	for _, p := range pages {
		if p {
			n++
		}
	}
	return n
}

func TestTouchMakesEveryPageResident(t *testing.T) {
	h := newHog()
	const pages = 16
	b, err := mapAnonymous(pages * h.pageSize)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(b) })
	if n := count(resident(t, b, h.pageSize)); n != 0 {
		t.Fatalf("%d of %d pages resident before touch; the test cannot tell touched from untouched", n, pages)
	}
	touch(b, h.pageSize)
	if n := count(resident(t, b, h.pageSize)); n != pages {
		t.Errorf("%d of %d pages resident after touch", n, pages)
	}
	for off := int64(0); off < int64(len(b)); off += h.pageSize {
		if b[off] == 0 {
			t.Fatalf("page at offset %d not written", off)
		}
	}
}

func TestGrowRoundsUpToWholePagesAndWritesThemAll(t *testing.T) {
	h := newHog()
	p := h.pageSize
	tests := map[string]struct {
		grow      []int64
		wantTotal int64
	}{
		"one byte is one page":     {grow: []int64{1}, wantTotal: p},
		"exact pages":              {grow: []int64{3 * p}, wantTotal: 3 * p},
		"a page and a bit is two":  {grow: []int64{p + 1}, wantTotal: 2 * p},
		"steps add up":             {grow: []int64{2 * p, p, 1}, wantTotal: 4 * p},
		"nothing asked, none held": {wantTotal: 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHog()
			for _, n := range tc.grow {
				if err := h.grow(n); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() {
				for _, c := range h.chunks {
					_ = syscall.Munmap(c)
				}
			})
			if h.total != tc.wantTotal {
				t.Errorf("total %d, want %d", h.total, tc.wantTotal)
			}
			var sum int64
			for _, c := range h.chunks {
				sum += int64(len(c))
				if n, all := count(resident(t, c, p)), int(int64(len(c))/p); n != all {
					t.Errorf("chunk of %d pages: %d resident", all, n)
				}
			}
			if sum != h.total {
				t.Errorf("chunks hold %d bytes, total says %d", sum, h.total)
			}
		})
	}
}

// syncBuffer is a log destination the test reads while run writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestRunGrowsByStepOnEachTickUpToMax(t *testing.T) {
	p := int64(os.Getpagesize())
	tests := map[string]struct {
		cfg       config
		ticks     int
		wantTotal int64
		wantLog   []string
	}{
		"holds the start amount without a step": {
			cfg: config{memory: 2 * p}, ticks: 3, wantTotal: 2 * p,
		},
		"grows without a max": {
			cfg: config{memory: p, step: 2 * p}, ticks: 3, wantTotal: 7 * p,
			wantLog: []string{"grew by"},
		},
		"stops at max, the last step cut short": {
			cfg: config{memory: p, step: 2 * p, max: 4 * p}, ticks: 4, wantTotal: 4 * p,
			wantLog: []string{"at --memory-max"},
		},
		"starts from nothing": {
			cfg: config{step: p, max: 2 * p}, ticks: 2, wantTotal: 2 * p,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h := newHog()
			var out syncBuffer
			ticks := make(chan time.Time)
			done := make(chan error, 1)
			go func() { done <- run(ctx, tc.cfg, h, log.New(&out, "", 0), ticks) }()
			// run takes each tick only between steps, so once the last send
			// returns, every earlier tick has been handled, and the last one
			// is handled before run looks at ctx again.
			for range tc.ticks {
				ticks <- time.Time{}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if h.total != tc.wantTotal {
				t.Errorf("holding %d bytes, want %d\n%s", h.total, tc.wantTotal, out.String())
			}
			for _, c := range h.chunks {
				if n, all := count(resident(t, c, p)), int(int64(len(c))/p); n != all {
					t.Errorf("chunk of %d pages: %d resident", all, n)
				}
				_ = syscall.Munmap(c)
			}
			for _, w := range tc.wantLog {
				if !strings.Contains(out.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestSplitSpreadsCPUOverWholeCoreWorkers(t *testing.T) {
	tests := map[string]struct {
		milli       int64
		wantWorkers int
		wantDuty    float64
	}{
		"none":              {0, 0, 0},
		"a quarter core":    {250, 1, 0.25},
		"one core":          {1000, 1, 1},
		"one and a half":    {1500, 2, 0.75},
		"just over two":     {2001, 3, 2001.0 / 3000},
		"negative is none":  {-5, 0, 0},
		"one millicore":     {1, 1, 0.001},
		"two cores exactly": {2000, 2, 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w, d := split(tc.milli)
			if w != tc.wantWorkers || d != tc.wantDuty {
				t.Errorf("split(%d) = %d, %v; want %d, %v", tc.milli, w, d, tc.wantWorkers, tc.wantDuty)
			}
			if w > 0 && math.Abs(float64(w)*d*1000-float64(tc.milli)) > 1e-9 {
				t.Errorf("workers × duty = %v cores, want %dm", float64(w)*d, tc.milli)
			}
		})
	}
}

// fakeClock moves a millisecond on every reading and by the full duration on
// every sleep, so a burner's cycle runs the same way every time.
type fakeClock struct {
	t      time.Time
	reads  int
	sleeps []time.Duration
}

func (c *fakeClock) now() time.Time {
	c.reads++
	now := c.t
	c.t = c.t.Add(time.Millisecond)
	return now
}

func (c *fakeClock) sleep(_ context.Context, d time.Duration) {
	c.sleeps = append(c.sleeps, d)
	c.t = c.t.Add(d)
}

func TestBurnerCycleIsBusyForItsDutyAndSleepsTheRest(t *testing.T) {
	tests := map[string]struct {
		duty      float64
		wantBusy  time.Duration
		wantSleep []time.Duration
	}{
		"a quarter": {duty: 0.25, wantBusy: 25 * time.Millisecond, wantSleep: []time.Duration{75 * time.Millisecond}},
		"all":       {duty: 1, wantBusy: 100 * time.Millisecond, wantSleep: nil},
		"a tenth":   {duty: 0.1, wantBusy: 10 * time.Millisecond, wantSleep: []time.Duration{90 * time.Millisecond}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := &fakeClock{t: time.Unix(0, 0)}
			b := burner{period: 100 * time.Millisecond, duty: tc.duty, now: c.now, sleep: c.sleep}
			b.cycle(context.Background())
			// One reading starts the cycle, then one per spin until busy has passed.
			if busy := time.Duration(c.reads-1) * time.Millisecond; busy != tc.wantBusy {
				t.Errorf("spun for %v, want %v", busy, tc.wantBusy)
			}
			if len(c.sleeps) != len(tc.wantSleep) || (len(c.sleeps) == 1 && c.sleeps[0] != tc.wantSleep[0]) {
				t.Errorf("slept %v, want %v", c.sleeps, tc.wantSleep)
			}
		})
	}
}

func TestBurnerStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &fakeClock{t: time.Unix(0, 0)}
	cycles := 0
	b := burner{period: 10 * time.Millisecond, duty: 0.5, now: c.now, sleep: func(ctx context.Context, d time.Duration) {
		cycles++
		if cycles == 3 {
			cancel()
		}
		c.sleep(ctx, d)
	}}
	b.run(ctx) // returns, or the test times out
	if cycles != 3 {
		t.Errorf("ran %d cycles, want 3 (stopped when cancelled)", cycles)
	}
}

func TestParseQuantities(t *testing.T) {
	bytesTests := map[string]int64{
		"0": 0, "1048576": 1 << 20, "200Mi": 200 << 20, "1.5Gi": 3 << 29, "4Ki": 4096,
		"500M": 500e6, "1k": 1000, "2T": 2e12, "1Ti": 1 << 40,
	}
	for in, want := range bytesTests {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	cpuTests := map[string]int64{"0": 0, "250m": 250, "1": 1000, "1.5": 1500, "0.1": 100, "2000m": 2000}
	for in, want := range cpuTests {
		if got, err := parseMilliCPU(in); err != nil || got != want {
			t.Errorf("parseMilliCPU(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-1", "10Mb", "Mi", "1e6", "1 Mi"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("parseBytes(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"", "-1", "250u", "m", "1.5m5"} {
		if _, err := parseMilliCPU(bad); err == nil {
			t.Errorf("parseMilliCPU(%q) accepted", bad)
		}
	}
}

func TestFormatBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1: "1", 4096: "4Ki", 200 << 20: "200Mi", 3 << 30: "3Gi", 1<<20 + 1: "1048577"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestProcessGrowsThenExitsZeroOnSIGTERM runs memhog as a process with the
// flags a pod would give it: it reaches its max, then stops on SIGTERM.
func TestProcessGrowsThenExitsZeroOnSIGTERM(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"=1",
		"MEMHOG_TEST_ARGS=--memory=1Mi --memory-step=1Mi --step-interval=1ms --memory-max=3Mi --cpu=50m")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	wait := func(want string) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("memhog closed its output before logging %q", want)
				}
				t.Log(l)
				if strings.Contains(l, want) {
					return
				}
			case <-deadline:
				t.Fatalf("memhog did not log %q within 60s", want)
			}
		}
	}
	wait("burning 50m CPU")
	wait("at --memory-max: holding 3Mi")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wait("exiting")
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("memhog ended with %v, want exit code 0", err)
	}
}
