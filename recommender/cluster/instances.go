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

package cluster

import (
	"github.com/openvpa/openvpa/recommender/model"
)

// smallInstances is the number of container states an instanceSet keeps in
// a slice before it moves them to a map.
const smallInstances = 8

// instanceSet holds a VPA's container states by pod and container. Most VPAs
// have a few pods, and a Go map of even one such entry allocates a group of
// eight 56-byte slots (7.5 MB at 10,000 one-pod VPAs), so a small set is a
// slice, searched in order; past smallInstances it is a map.
type instanceSet struct {
	small []instanceEntry
	large map[instanceKey]*model.ContainerState
}

type instanceEntry struct {
	key   instanceKey
	state *model.ContainerState
}

func (s *instanceSet) get(k instanceKey) (*model.ContainerState, bool) {
	if s.large != nil {
		cs, ok := s.large[k]
		return cs, ok
	}
	for i := range s.small {
		if s.small[i].key == k {
			return s.small[i].state, true
		}
	}
	return nil, false
}

// put adds or replaces the state of k.
func (s *instanceSet) put(k instanceKey, cs *model.ContainerState) {
	if s.large != nil {
		s.large[k] = cs
		return
	}
	for i := range s.small {
		if s.small[i].key == k {
			s.small[i].state = cs
			return
		}
	}
	if len(s.small) < smallInstances {
		s.small = append(s.small, instanceEntry{key: k, state: cs})
		return
	}
	s.large = make(map[instanceKey]*model.ContainerState, len(s.small)+1)
	for _, e := range s.small {
		s.large[e.key] = e.state
	}
	s.large[k] = cs
	s.small = nil
}

// deleteFunc removes the states whose key drop reports.
func (s *instanceSet) deleteFunc(drop func(instanceKey) bool) {
	if s.large != nil {
		for k := range s.large {
			if drop(k) {
				delete(s.large, k)
			}
		}
		return
	}
	kept := s.small[:0]
	for _, e := range s.small {
		if !drop(e.key) {
			kept = append(kept, e)
		}
	}
	clear(s.small[len(kept):])
	s.small = kept
}

// each calls f for every state.
func (s *instanceSet) each(f func(instanceKey, *model.ContainerState)) {
	if s.large != nil {
		for k, cs := range s.large {
			f(k, cs)
		}
		return
	}
	for _, e := range s.small {
		f(e.key, e.state)
	}
}
