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

package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/openvpa/openvpa/admission-controller/selftest"
	"github.com/openvpa/openvpa/pkg/annotations"
	"github.com/openvpa/openvpa/pkg/kubeclient"
)

// SelftestCommand is the name of the subcommand that checks a running
// webhook (selftest.Run): `vpa-admission-controller selftest [flags]`.
const SelftestCommand = "selftest"

// Main runs the admission controller, or its selftest subcommand when args
// start with "selftest", and returns the exit status.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == SelftestCommand {
		return Selftest(ctx, args[1:], stdout, stderr)
	}
	return NewCommand().Execute(ctx, args, stdout, stderr)
}

// selftestOptions are the selftest subcommand's flags.
type selftestOptions struct {
	client     kubeclient.Options
	namespace  string
	deployment string
	image      string
	timeout    time.Duration
}

func (o *selftestOptions) addFlags(fs *pflag.FlagSet) {
	o.client.AddFlags(fs)
	fs.StringVar(&o.namespace, "namespace", o.namespace, "Namespace of the dry-run pod (and of the throwaway Deployment and VPA); default $NAMESPACE.")
	fs.StringVar(&o.deployment, "deployment", o.deployment, "An existing Deployment a VPA targets, whose pod template the dry-run pod copies; empty: a throwaway Deployment (no replicas) and VPA, deleted afterwards.")
	fs.StringVar(&o.image, "image", o.image, "Image of the throwaway Deployment (never pulled).")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "How long to wait for the webhook to patch the pod.")
}

func (o *selftestOptions) validate() error {
	var errs []error
	if err := o.client.Validate(); err != nil {
		errs = append(errs, err)
	}
	if o.namespace == "" {
		errs = append(errs, errors.New("--namespace is required (or $NAMESPACE)"))
	}
	if o.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout must be positive, got %v", o.timeout))
	}
	if o.deployment == "" && o.image == "" {
		errs = append(errs, errors.New("--image is required without --deployment"))
	}
	return errors.Join(errs...)
}

// Selftest creates a pod in dry run and checks that the webhook patched it
// (see package selftest). It prints the vpaUpdates annotation it saw and
// returns 0, or prints why it failed and returns 1.
func Selftest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := selftestOptions{client: kubeclient.NewOptions(Name + "-selftest"), namespace: os.Getenv("NAMESPACE"),
		image: "registry.k8s.io/pause:3.10", timeout: 2 * time.Minute}
	fs := pflag.NewFlagSet(Name+" "+SelftestCommand, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	o.addFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s %s [flags]\n\nChecks that the admission webhook patches a new pod (a server-side dry run).\n\n%s", Name, SelftestCommand, fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return selftestFailed(stderr, err)
	}
	if fs.NArg() > 0 {
		return selftestFailed(stderr, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if err := o.validate(); err != nil {
		return selftestFailed(stderr, err)
	}
	cfg, err := o.client.RESTConfig()
	if err != nil {
		return selftestFailed(stderr, err)
	}
	clients, err := kubeclient.NewClients(cfg)
	if err != nil {
		return selftestFailed(stderr, err)
	}
	ctx = klog.NewContext(ctx, klog.Background().WithName(Name+"-"+SelftestCommand))
	res, err := selftest.Run(ctx, selftest.Clients{
		Pods:        clients.Pods(o.namespace),
		Deployments: clients.Deployments(o.namespace),
		VPAs:        clients.VPA.VerticalPodAutoscalers(o.namespace),
	}, selftest.Config{Namespace: o.namespace, Deployment: o.deployment, Image: o.image, Timeout: o.timeout})
	if err != nil {
		return selftestFailed(stderr, err)
	}
	fmt.Fprintf(stdout, "the admission webhook patched the pod: %s=%q\n", annotations.Updates, res.VPAUpdates)
	return 0
}

func selftestFailed(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "%s %s: %v\n", Name, SelftestCommand, err)
	return 1
}
