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

// Package differential feeds upstream VPA's recommender code (the release this
// module pins in go.mod) and OpenVPA's the same usage histories and requires
// the same numbers, integer for integer: recommendations (target, lower and
// upper bound, uncapped target) and checkpoints, each side reading the
// other's. It holds tests only; go test -C hack/tools/upstream-vpa ./...
// runs them.
package differential
