package loop

import (
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// isNodeCapacity reports whether a resize was refused as Forbidden with a
// NodeCapacity cause, i.e. the pod cannot fit its node.
func isNodeCapacity(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsForbidden(err) {
		return false
	}
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			if c.Type == "NodeCapacity" {
				return true
			}
		}
	}
	return false
}
