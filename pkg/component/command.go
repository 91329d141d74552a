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
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/openvpa/openvpa/pkg/version"
)

// Options is the shape every component's options share (app/options):
// flags in named sections, every problem at once, and the configuration
// the component runs with.
type Options[C any] interface {
	// FlagSections registers the flags in the sections --help shows, the
	// logging options through Sections.AddLogging.
	FlagSections() *Sections
	// Validate returns every problem with the flags, each naming its flag.
	Validate() []error
	// Config resolves the validated options into what the component runs
	// with (e.g. the API client configuration from --kubeconfig).
	Config() (C, error)
}

// Command is one binary's command line.
type Command[C any] struct {
	// Name is the binary's name: the root logger's name, and the prefix of
	// the error it exits on in the text format.
	Name string
	// Usage is what --help prints above the flag sections.
	Usage string
	// Options are the component's options, at their defaults.
	Options Options[C]
	// Run runs the component until ctx ends; it never exits the process.
	Run func(ctx context.Context, config C) error
}

// Execute parses args, sets up logging, validates the options, resolves
// them and runs the component. It returns the exit status: 0, or 1 after
// reporting the error it ends on. With a structured --logging-format (json)
// that error is a log entry like every other line, once the logging flags
// were parsed and valid; in the text format, and before, it is the line
// "<name>: <error>" on stderr. --help prints the usage to stderr;
// --version prints the version line (version.Info.Line) to stdout. Both exit
// with 0 and run nothing. Before it runs the component, Execute logs the
// version, commit and build date.
func (c *Command[C]) Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	defer klog.Flush()
	sections, printVersion := c.flags()
	fs := pflag.NewFlagSet(c.Name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	sections.AddTo(fs)
	fs.Usage = func() { sections.Usage(stderr, c.Usage) }
	err := fs.Parse(args)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err == nil && *printVersion {
		fmt.Fprintln(stdout, version.Get().Line(c.Name))
		return 0
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	// Logging first, when its own flags are valid (even if others are
	// not), so that what follows is reported in the chosen format.
	r := reporter{name: c.Name, stderr: stderr}
	ctx = r.setUp(ctx, sections.logging)
	if err != nil {
		return r.fail(ctx, err)
	}
	if errs := c.Options.Validate(); len(errs) > 0 {
		return r.fail(ctx, errors.Join(errs...))
	}
	if r.err != nil {
		return r.fail(ctx, r.err)
	}
	config, err := c.Options.Config()
	if err != nil {
		return r.fail(ctx, err)
	}
	klog.FromContext(ctx).Info("Starting", version.Get().KeysAndValues()...)
	if err := c.Run(ctx, config); err != nil {
		return r.fail(ctx, err)
	}
	return 0
}

// flags returns the command line's flag sections: the options' and the
// "version" section with --version, whose value it also returns.
func (c *Command[C]) flags() (*Sections, *bool) {
	sections := c.Options.FlagSections()
	printVersion := sections.FlagSet("version").Bool("version", false, "Print the version, commit and build date, and exit.")
	return sections, printVersion
}

// AddFlags registers every flag of the command line on fs, as Execute
// parses them (hack/flagsdocs lists them in docs/flags.md).
func (c *Command[C]) AddFlags(fs *pflag.FlagSet) {
	sections, _ := c.flags()
	sections.AddTo(fs)
}

// reporter reports the error a command exits on, in the logging format once
// logging is set up.
type reporter struct {
	name   string
	stderr io.Writer
	// structured is set once a structured format is applied.
	structured bool
	// err is why logging could not be applied although its flags are valid.
	err error
}

// setUp applies l when its flags are valid, and returns ctx with the
// component's logger.
func (r *reporter) setUp(ctx context.Context, l *Logging) context.Context {
	if l == nil || len(l.Validate()) > 0 {
		return ctx // Validate reports them, in text
	}
	lctx, err := l.Apply(ctx, r.name)
	if err != nil {
		r.err = err
		return ctx
	}
	r.structured = l.structured()
	return lctx
}

// fail reports err and returns the exit status 1.
func (r *reporter) fail(ctx context.Context, err error) int {
	if r.structured {
		klog.FromContext(ctx).Error(err, "Exiting on error")
		return 1
	}
	fmt.Fprintln(r.stderr, r.name+":", err)
	return 1
}
