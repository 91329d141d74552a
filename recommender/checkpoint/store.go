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

package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/pager"

	vpav1 "github.com/openvpa/openvpa/apis/autoscaling/v1"
	vpaclient "github.com/openvpa/openvpa/apis/generated/clientset/versioned/typed/autoscaling/v1"
	"github.com/openvpa/openvpa/recommender/model"
)

// FieldManager names the recommender in managedFields.
const FieldManager = "vpa-recommender"

// Name returns the checkpoint object name of a VPA's container.
func Name(vpaName, container string) string {
	return vpaName + "-" + container
}

// Key identifies the checkpoint of one container of one VPA.
type Key struct {
	Namespace string
	VPA       string
	Container string
}

// KeyOf returns the key of a checkpoint object.
func KeyOf(cp *vpav1.VerticalPodAutoscalerCheckpoint) Key {
	return Key{Namespace: cp.Namespace, VPA: cp.Spec.VPAObjectName, Container: cp.Spec.ContainerName}
}

// Store reads and writes checkpoints through the API.
type Store struct {
	client vpaclient.AutoscalingV1Interface
}

// NewStore returns a Store using client.
func NewStore(client vpaclient.AutoscalingV1Interface) *Store {
	return &Store{client: client}
}

// Write saves status as the checkpoint of k: a JSON patch replacing /status,
// or a Create when the checkpoint does not exist.
func (s *Store) Write(ctx context.Context, k Key, status vpav1.VerticalPodAutoscalerCheckpointStatus) error {
	api := s.client.VerticalPodAutoscalerCheckpoints(k.Namespace)
	name := Name(k.VPA, k.Container)
	patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/status", "value": status}})
	if err != nil {
		return fmt.Errorf("encoding checkpoint %s/%s: %w", k.Namespace, name, err)
	}
	_, err = api.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	if apierrors.IsNotFound(err) {
		cp := &vpav1.VerticalPodAutoscalerCheckpoint{
			ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: name},
			Spec:       vpav1.VerticalPodAutoscalerCheckpointSpec{VPAObjectName: k.VPA, ContainerName: k.Container},
			Status:     status,
		}
		_, err = api.Create(ctx, cp, metav1.CreateOptions{FieldManager: FieldManager})
	}
	if err != nil {
		return fmt.Errorf("writing checkpoint %s/%s: %w", k.Namespace, name, err)
	}
	return nil
}

// ListPageSize is how many checkpoints one list request asks for: a
// listing of every checkpoint holds one page at a time, not all of them
// (10,000 decoded checkpoints are tens of MB).
const ListPageSize = 500

// Each calls fn with every checkpoint of namespace ("" for all), listed a
// page at a time; it stops at the first error of fn. The checkpoint passed
// to fn is valid only during the call.
func (s *Store) Each(ctx context.Context, namespace string, fn func(*vpav1.VerticalPodAutoscalerCheckpoint) error) error {
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return s.client.VerticalPodAutoscalerCheckpoints(namespace).List(ctx, o)
	})
	p.PageSize = ListPageSize
	p.PageBufferSize = 1
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		cp, ok := o.(*vpav1.VerticalPodAutoscalerCheckpoint)
		if !ok {
			return fmt.Errorf("listing checkpoints: unexpected %T", o)
		}
		return fn(cp)
	})
	if err != nil {
		return fmt.Errorf("listing checkpoints: %w", err)
	}
	return nil
}

// Delete removes a checkpoint object; one already gone is not an error.
func (s *Store) Delete(ctx context.Context, namespace, name string) error {
	err := s.client.VerticalPodAutoscalerCheckpoints(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting checkpoint %s/%s: %w", namespace, name, err)
	}
	return nil
}

// Restored is one decoded checkpoint.
type Restored struct {
	Key       Key
	Aggregate *model.AggregateState
	// LastUpdate is when the checkpoint was written (zero if unknown).
	LastUpdate time.Time
}

// Restore decodes one checkpoint with the model configuration cfg (nil
// means the default). A corrupt checkpoint is an error; the caller logs it
// and overwrites it at the next write.
func Restore(cp *vpav1.VerticalPodAutoscalerCheckpoint, cfg *model.Config, now time.Time) (Restored, error) {
	k := KeyOf(cp)
	if k.VPA == "" || k.Container == "" {
		return Restored{}, fmt.Errorf("checkpoint %s/%s has no VPA or container name", cp.Namespace, cp.Name)
	}
	a, err := model.RestoreCheckpoint(cfg, &cp.Status, now)
	if err != nil {
		return Restored{}, fmt.Errorf("checkpoint %s/%s: %w", cp.Namespace, cp.Name, err)
	}
	return Restored{Key: k, Aggregate: a, LastUpdate: cp.Status.LastUpdateTime.Time}, nil
}

// GarbageCollect lists the checkpoints of namespace ("" for all) and deletes
// those keep rejects. It returns the deleted keys and the joined errors; a
// failed deletion does not stop the others.
func (s *Store) GarbageCollect(ctx context.Context, namespace string, keep func(*vpav1.VerticalPodAutoscalerCheckpoint) bool) ([]Key, error) {
	type doomed struct {
		namespace, name string
		key             Key
	}
	var drop []doomed
	if err := s.Each(ctx, namespace, func(cp *vpav1.VerticalPodAutoscalerCheckpoint) error {
		if !keep(cp) {
			drop = append(drop, doomed{cp.Namespace, cp.Name, KeyOf(cp)})
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var deleted []Key
	var errs []error
	for _, d := range drop {
		if err := s.Delete(ctx, d.namespace, d.name); err != nil {
			errs = append(errs, err)
			continue
		}
		deleted = append(deleted, d.key)
	}
	return deleted, joinErrors(errs)
}

func joinErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%d checkpoint deletions failed, first: %w", len(errs), errs[0])
}
