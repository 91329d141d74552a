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

// Command memhog is the test workload of the real node (image
// ghcr.io/openvpa/memhog:local): it allocates memory and writes every page of
// it, so the kernel counts all of it against the container's cgroup, holds
// it, optionally grows it by a step every interval (to push a container past
// its limit and be OOM-killed), and burns a given fraction of CPU. It logs
// each step to standard output and exits 0 on SIGINT or SIGTERM.
//
//	memhog --memory=200Mi --cpu=250m
//	memhog --memory=50Mi --memory-step=25Mi --step-interval=5s --memory-max=400Mi
//
// Quantities are written as in a pod spec: memory in bytes with an optional
// suffix Ki, Mi, Gi, Ti (powers of 1024) or k, M, G, T (powers of 1000); CPU in
// cores (0.5) or millicores (500m).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	var memory, step, limit, cpu string
	var cfg config
	fs := flag.NewFlagSet("memhog", flag.ExitOnError)
	fs.StringVar(&memory, "memory", "0", "memory to allocate and touch at start, e.g. 200Mi")
	fs.StringVar(&step, "memory-step", "0", "memory to add every --step-interval; 0 holds --memory")
	fs.DurationVar(&cfg.interval, "step-interval", 10*time.Second, "how often to add --memory-step")
	fs.StringVar(&limit, "memory-max", "0", "stop growing at this much memory; 0 grows without end")
	fs.StringVar(&cpu, "cpu", "0", "CPU to burn, e.g. 250m or 1.5")
	_ = fs.Parse(os.Args[1:])

	logger := log.New(os.Stdout, "memhog: ", log.LstdFlags|log.LUTC)
	var err error
	parse := func(s string, f func(string) (int64, error), into *int64) {
		if err == nil {
			*into, err = f(s)
		}
	}
	parse(memory, parseBytes, &cfg.memory)
	parse(step, parseBytes, &cfg.step)
	parse(limit, parseBytes, &cfg.max)
	parse(cpu, parseMilliCPU, &cfg.milliCPU)
	if err == nil && cfg.step > 0 && cfg.interval <= 0 {
		err = fmt.Errorf("--step-interval must be positive, got %v", cfg.interval)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "memhog:", err)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var ticks <-chan time.Time
	if cfg.step > 0 {
		ticker := time.NewTicker(cfg.interval)
		defer ticker.Stop()
		ticks = ticker.C
	}
	if err := run(ctx, cfg, newHog(), logger, ticks); err != nil {
		logger.Print(err)
		os.Exit(1)
	}
	logger.Print("got a termination signal, exiting")
}

// config is what the flags ask for.
type config struct {
	memory, step, max int64 // bytes
	interval          time.Duration
	milliCPU          int64
}

// run allocates cfg.memory, starts the CPU burners, grows the memory by
// cfg.step on every tick until cfg.max, and returns when ctx ends.
func run(ctx context.Context, cfg config, h *hog, logger *log.Logger, ticks <-chan time.Time) error {
	logger.Printf("started: memory %s, step %s every %v up to %s, cpu %dm",
		formatBytes(cfg.memory), formatBytes(cfg.step), cfg.interval, maxString(cfg.max), cfg.milliCPU)
	if cfg.memory > 0 {
		if err := h.grow(cfg.memory); err != nil {
			return err
		}
		logger.Printf("holding %s (%d bytes), every page written", formatBytes(h.total), h.total)
	}
	if cfg.milliCPU > 0 {
		workers, duty := split(cfg.milliCPU)
		for range workers {
			go newBurner(duty).run(ctx)
		}
		logger.Printf("burning %dm CPU: %d worker(s) busy %.0f%% of every %v", cfg.milliCPU, workers, duty*100, burnPeriod)
	}
	atMax := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticks:
			n := cfg.step
			if cfg.max > 0 {
				n = min(n, cfg.max-h.total)
			}
			if n <= 0 {
				if !atMax {
					logger.Printf("at --memory-max: holding %s (%d bytes)", formatBytes(h.total), h.total)
					atMax = true
				}
				continue
			}
			if err := h.grow(n); err != nil {
				return err
			}
			logger.Printf("grew by %s: holding %s (%d bytes), every page written", formatBytes(n), formatBytes(h.total), h.total)
		}
	}
}

func maxString(n int64) string {
	if n <= 0 {
		return "no limit"
	}
	return formatBytes(n)
}
