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
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	admissionapp "github.com/openvpa/openvpa/admission-controller/app"
	recommenderapp "github.com/openvpa/openvpa/recommender/app"
	updaterapp "github.com/openvpa/openvpa/updater/app"
)

// upstreamFlag is one row of testdata/upstream-flags.tsv.
type upstreamFlag struct {
	component, name, typ, def string
}

// readUpstreamFlags reads the upstream flag table that
// hack/update-upstream-flags.sh extracts from the pinned upstream module.
func readUpstreamFlags(t *testing.T) (version string, flags []upstreamFlag) {
	t.Helper()
	f, err := os.Open("testdata/upstream-flags.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			if version == "" {
				if fields := strings.Fields(line); len(fields) > 2 {
					version = strings.TrimSuffix(fields[2], ",")
				}
			}
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 4 {
			t.Fatalf("malformed row %q", line)
		}
		flags = append(flags, upstreamFlag{component: cols[0], name: cols[1], typ: cols[2], def: cols[3]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return version, flags
}

// severities are klog's severity names as its flags print them.
var severities = map[string]string{"info": "0", "warning": "1", "error": "2", "fatal": "3"}

// sameDefault compares a default as upstream's --help prints it with ours.
func sameDefault(typ, upstream, ours string) bool {
	if ours == "[]" {
		ours = ""
	}
	if upstream == ours {
		return true
	}
	switch typ {
	case "duration":
		u, err1 := time.ParseDuration(upstream)
		o, err2 := time.ParseDuration(ours)
		return err1 == nil && err2 == nil && u == o
	case "float", "float64", "int", "uint":
		u, err1 := strconv.ParseFloat(upstream, 64)
		o, err2 := strconv.ParseFloat(ours, 64)
		return err1 == nil && err2 == nil && u == o
	case "severity":
		// upstream's table prints names or nothing; pflag the number.
		return upstream == "" || severities[strings.ToLower(upstream)] == ours
	case "bool":
		// upstream's table prints "false" for an unset bool; pflag too.
		return (upstream == "" && ours == "false") || (upstream == "false" && ours == "")
	}
	return false
}

// TestUpstreamFlagParity fails when a flag of the pinned upstream VPA release
// (hack/tools/upstream-vpa/go.mod) is missing from the component of the same
// name here, or has another default. To follow a new upstream release, bump
// the pin and run hack/update-upstream-flags.sh; this test then names what is
// missing.
func TestUpstreamFlagParity(t *testing.T) {
	version, upstream := readUpstreamFlags(t)
	if len(upstream) < 100 {
		t.Fatalf("only %d upstream flags read; testdata/upstream-flags.tsv is damaged", len(upstream))
	}
	ours := map[string]*pflag.FlagSet{}
	for component, add := range map[string]func(*pflag.FlagSet){
		"recommender":          recommenderapp.NewCommand().AddFlags,
		"updater":              updaterapp.NewCommand().AddFlags,
		"admission-controller": admissionapp.NewCommand().AddFlags,
	} {
		fs := pflag.NewFlagSet(component, pflag.ContinueOnError)
		add(fs)
		ours[component] = fs
	}
	for _, u := range upstream {
		fs, ok := ours[u.component]
		if !ok {
			t.Errorf("upstream %s component %q is unknown here", version, u.component)
			continue
		}
		f := fs.Lookup(u.name)
		if f == nil {
			t.Errorf("vpa-%s lacks upstream %s's flag --%s (%s, default %q)", u.component, version, u.name, u.typ, u.def)
			continue
		}
		if !sameDefault(u.typ, u.def, f.DefValue) {
			t.Errorf("vpa-%s --%s: default %q, upstream %s has %q", u.component, u.name, f.DefValue, version, u.def)
		}
	}
}
