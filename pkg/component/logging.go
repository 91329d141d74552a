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

package component

import (
	"context"
	goflag "flag"
	"fmt"
	"log"
	"log/slog"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	// The json format of --logging-format.
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/klog/v2"
)

// The logging defaults of upstream VPA's three binaries, which set them
// over klog's own (0 and ERROR) before parsing their flags.
const (
	// DefaultVerbosity is the default of -v.
	DefaultVerbosity = 4
	// DefaultStderrThreshold is the default of --stderrthreshold.
	DefaultStderrThreshold = "INFO"
)

// klogDefaults are the defaults of klog's flags by klog's name for them
// (log_file), read before anything changes klog's settings, which are the
// process's.
var klogDefaults = func() map[string]string {
	fs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(fs)
	defaults := map[string]string{}
	fs.VisitAll(func(f *goflag.Flag) { defaults[f.Name] = f.DefValue })
	return defaults
}()

// Logging are a component's logging options.
type Logging struct {
	// Config is component-base's logging configuration: format,
	// verbosity, vmodule, flush frequency.
	Config *logsapi.LoggingConfiguration
	// klogFlags are klog's flags but -v and --vmodule (Config's), as
	// AddFlags registered them.
	klogFlags []*pflag.Flag
}

// NewLogging returns logging options with upstream VPA's defaults.
func NewLogging() *Logging {
	c := logsapi.NewLoggingConfiguration()
	c.Verbosity = DefaultVerbosity
	return &Logging{Config: c}
}

// AddFlags registers --logging-format, -v, --vmodule and the other
// component-base logging flags, and klog's flags as upstream VPA's binaries
// have them (--logtostderr, --log-file, --log-dir, --skip-headers, ...),
// which apply to the text format.
func (l *Logging) AddFlags(fs *pflag.FlagSet) {
	logsapi.AddFlags(l.Config, fs)
	klogFlags := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(klogFlags)
	// klog's flags are bound to its settings, the process's: set upstream's
	// default whether or not an earlier registration in the process (the
	// flag docs generator registers all three components) parsed another.
	if f := klogFlags.Lookup("stderrthreshold"); f != nil {
		_ = f.Value.Set(DefaultStderrThreshold)
	}
	l.klogFlags = nil
	klogFlags.VisitAll(func(gf *goflag.Flag) {
		if gf.Name == "v" || gf.Name == "vmodule" {
			return // component-base's own, above
		}
		f := pflag.PFlagFromGoFlag(gf)
		// Upstream's binaries normalise klog's names (log_file) to
		// --log-file; Sections.AddTo takes both spellings.
		f.Name = strings.ReplaceAll(gf.Name, "_", "-")
		f.DefValue = klogDefaults[gf.Name]
		if gf.Name == "stderrthreshold" {
			f.DefValue = gf.Value.String()
		}
		fs.AddFlag(f)
		l.klogFlags = append(l.klogFlags, f)
	})
}

// Validate returns the problems with the options, each naming its flag.
func (l *Logging) Validate() []error {
	var errs []error
	for _, err := range logsapi.Validate(l.Config, nil, nil) {
		errs = append(errs, fmt.Errorf("logging: %w", err))
	}
	if l.structured() {
		for _, f := range l.klogFlags {
			if f.Changed {
				errs = append(errs, fmt.Errorf("logging: --%s applies to --logging-format=text only, not %s", f.Name, l.Config.Format))
			}
		}
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
	if !l.structured() {
		// component-base's text logger writes to stderr past klog's own
		// output, so that --log-file, --log-dir, --logtostderr,
		// --stderrthreshold, --skip-headers and the other klog flags would
		// not apply. Upstream's binaries log through klog's output; so does
		// the text format here. The alpha text options (split streams) need
		// a feature gate the binaries do not offer.
		klog.ClearLogger()
		// The slog default, and with it the standard library's log
		// package, writes there too.
		slog.SetDefault(slog.New(logr.ToSlogHandler(klog.Background())))
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
