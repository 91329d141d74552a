#!/usr/bin/env bash
# Copyright The OpenVPA Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# Runs the kubectl built with the local control plane (same version as the cluster), against the
# local cluster unless KUBECONFIG says otherwise. Scripts use this instead of a kubectl on PATH.
#
#   hack/cluster/kubectl.sh get nodes
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ! -x "${BIN_DIR}/kubectl" ]]; then
  "${CLUSTER_HACK_DIR}/build.sh" >&2
fi
export KUBECONFIG=${KUBECONFIG:-${CLUSTER_DIR}/kubeconfig}
exec "${BIN_DIR}/kubectl" "$@"
