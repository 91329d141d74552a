package leaderelection

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestRunWithoutElectionCallsRunDirectly(t *testing.T) {
	want := errors.New("done")
	err := Run(context.Background(), NewOptions("x"), nil, func(context.Context) error { return want })
	if !errors.Is(err, want) {
		t.Fatalf("Run() = %v, want %v", err, want)
	}
}

func TestRunAcquiresAndReleasesTheLease(t *testing.T) {
	client := fake.NewClientset()
	o := NewOptions("vpa-test-lease")
	o.LeaderElect = true
	o.RetryPeriod = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := Run(ctx, o, client, func(ctx context.Context) error {
		lease, err := client.CoordinationV1().Leases("kube-system").Get(ctx, "vpa-test-lease", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
			return errors.New("lease has no holder while running")
		}
		cancel()
		return nil
	})
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	lease, err := client.CoordinationV1().Leases("kube-system").Get(context.Background(), "vpa-test-lease", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" {
		t.Errorf("lease still held by %q after cancel", *lease.Spec.HolderIdentity)
	}
}

func TestValidate(t *testing.T) {
	o := NewOptions("x")
	o.LeaderElect = true
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults must validate: %v", err)
	}
	o.RenewDeadline = o.LeaseDuration
	if err := o.Validate(); err == nil {
		t.Fatal("renew deadline equal to the lease duration must be rejected")
	}
}

func TestRunReturnsOnlyAfterTheWorkFunction(t *testing.T) {
	client := fake.NewClientset()
	o := NewOptions("vpa-wait-lease")
	o.LeaderElect = true
	o.RetryPeriod = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	finished := false
	err := Run(ctx, o, client, func(ctx context.Context) error {
		cancel()
		<-ctx.Done()
		// Work that outlives the cancellation, like writing checkpoints on shutdown.
		time.Sleep(50 * time.Millisecond)
		finished = true
		return nil
	})
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if !finished {
		t.Fatal("Run returned before the work function finished")
	}
}
