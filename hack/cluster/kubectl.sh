#!/usr/bin/env bash
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
