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

// Package component is what the three OpenVPA binaries share: the command
// line (Command: flags in named sections, logging options, validation, the
// error a binary exits on) and the runtime (Runtime: informers, servers,
// readiness, leader-only work and the order they stop in).
package component

import (
	"context"
	goflag "flag"
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"
	// The json format of --logging-format.
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/klog/v2"
)

// klogStderrThreshold is klog's own --stderrthreshold default, read before
// any component changes it.
var klogStderrThreshold = func() string {
	fs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(fs)
	if f := fs.Lookup("stderrthreshold"); f != nil {
		return f.Value.String()
	}
	return ""
}()

// Logging are a component's logging options.
type Logging struct {
	// Config is component-base's logging configuration: format,
	// verbosity, vmodule, flush frequency.
	Config *logsapi.LoggingConfiguration
	// stderrThreshold, when set, is the default of klog's
	// --stderrthreshold.
	stderrThreshold string
}

// NewLogging returns logging options with the given default verbosity and,
// unless empty, default --stderrthreshold (upstream's recommender and
// admission controller use 4 and INFO).
func NewLogging(verbosity uint32, stderrThreshold string) *Logging {
	c := logsapi.NewLoggingConfiguration()
	c.Verbosity = logsapi.VerbosityLevel(verbosity)
	return &Logging{Config: c, stderrThreshold: stderrThreshold}
}

// AddFlags registers --logging-format, -v, --vmodule and the other
// component-base logging flags, and upstream VPA's klog flags
// (--logtostderr, --log_file, ...), which apply to the text format.
func (l *Logging) AddFlags(fs *pflag.FlagSet) {
	logsapi.AddFlags(l.Config, fs)
	klogFlags := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(klogFlags)
	// klog's flags are bound to its global state: set this component's
	// default whether or not another registration in the process (the flag
	// docs generator registers all three) changed it.
	threshold := l.stderrThreshold
	if threshold == "" {
		threshold = klogStderrThreshold
	}
	if f := klogFlags.Lookup("stderrthreshold"); f != nil && threshold != "" {
		_ = f.Value.Set(threshold)
		f.DefValue = threshold
	}
	klogFlags.VisitAll(func(f *goflag.Flag) {
		if f.Name == "v" || f.Name == "vmodule" {
			return // component-base's own, above
		}
		fs.AddGoFlag(f)
	})
}

// Validate returns the problems with the options, each naming its flag.
func (l *Logging) Validate() []error {
	var errs []error
	for _, err := range logsapi.Validate(l.Config, nil, nil) {
		errs = append(errs, fmt.Errorf("logging: %w", err))
	}
	return errs
}

// structured reports whether the format is not klog's text format, so that
// every line is a log entry (json).
func (l *Logging) structured() bool {
	return l.Config.Format != "" && l.Config.Format != logsapi.DefaultLogFormat
}

// Apply sets up logging as configured and returns ctx with a logger named
// after the component. Call it once, before anything logs.
func (l *Logging) Apply(ctx context.Context, name string) (context.Context, error) {
	if err := logsapi.ValidateAndApply(l.Config, nil); err != nil {
		return ctx, err
	}
	logger := klog.Background().WithName(name)
	if l.structured() {
		// The standard library's log package (net/http's server errors)
		// writes through the logger too, so that every line is a log entry.
		// Depth: Write, the log package's output and its Printf.
		log.SetOutput(stdlogWriter{logger: logger.WithCallDepth(3)})
		log.SetFlags(0)
	}
	return klog.NewContext(ctx, logger), nil
}

// stdlogWriter writes the standard library's log lines as log entries.
type stdlogWriter struct {
	logger klog.Logger
}

func (w stdlogWriter) Write(p []byte) (int, error) {
	w.logger.Info(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// Sections are a component's flags in named sections, in the order --help
// prints them.
type Sections struct {
	cliflag.NamedFlagSets
	// logging is the section added by AddLogging, which Command applies.
	logging *Logging
}

// AddLogging adds the "logging" section: l's flags, which Command applies
// before it reports anything.
func (s *Sections) AddLogging(l *Logging) {
	s.logging = l
	l.AddFlags(s.FlagSet("logging"))
}

// AddTo adds every section's flags to fs, the one flag set parsed.
func (s *Sections) AddTo(fs *pflag.FlagSet) {
	for _, name := range s.Order {
		fs.AddFlagSet(s.FlagSets[name])
	}
}

// Usage prints usage, the section headings and their flags.
func (s *Sections) Usage(w io.Writer, usage string) {
	fmt.Fprintf(w, "%s\n", usage)
	cliflag.PrintSections(w, s.NamedFlagSets, 0)
}
