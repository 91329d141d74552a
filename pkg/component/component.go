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
	"fmt"
	"io"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
)

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

// AddTo adds every section's flags to fs, the one flag set parsed. As
// upstream's binaries, fs takes "_" and "-" alike between the words of a
// flag's name (--log_file is --log-file).
func (s *Sections) AddTo(fs *pflag.FlagSet) {
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	for _, name := range s.Order {
		fs.AddFlagSet(s.FlagSets[name])
	}
}

// Usage prints usage, the section headings and their flags.
func (s *Sections) Usage(w io.Writer, usage string) {
	fmt.Fprintf(w, "%s\n", usage)
	cliflag.PrintSections(w, s.NamedFlagSets, 0)
}
