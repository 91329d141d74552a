// Package targetinformers builds target.Listers from client-go's shared
// informer factory, for components that already link it (the updater and the
// admission controller). The recommender builds its own lean informers
// instead: pkg/target itself stays free of client-go's all-groups factory.
package targetinformers

import (
	"k8s.io/client-go/informers"

	"github.com/openvpa/openvpa/pkg/target"
)

// Listers registers the well-known controllers' informers on f (start f
// afterwards) and returns their listers.
func Listers(f informers.SharedInformerFactory) target.Listers {
	return target.Listers{
		Deployments:            f.Apps().V1().Deployments().Lister(),
		ReplicaSets:            f.Apps().V1().ReplicaSets().Lister(),
		StatefulSets:           f.Apps().V1().StatefulSets().Lister(),
		DaemonSets:             f.Apps().V1().DaemonSets().Lister(),
		Jobs:                   f.Batch().V1().Jobs().Lister(),
		CronJobs:               f.Batch().V1().CronJobs().Lister(),
		ReplicationControllers: f.Core().V1().ReplicationControllers().Lister(),
	}
}
