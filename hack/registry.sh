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

# Installs what e2e/release needs to run a registry the real node pulls from: Debian's
# docker-registry (the CNCF distribution registry) and socat, with apt-get when missing, and
# prints the registry binary's path.
#
#   hack/registry.sh      # prints /usr/bin/docker-registry
set -euo pipefail

REGISTRY_BIN=/usr/bin/docker-registry
missing=()
[[ -x "${REGISTRY_BIN}" ]] || missing+=(docker-registry)
command -v socat >/dev/null 2>&1 || missing+=(socat)
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "installing ${missing[*]} with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
[[ -x "${REGISTRY_BIN}" ]] || { echo "no ${REGISTRY_BIN} after installing docker-registry" >&2; exit 1; }
echo "${REGISTRY_BIN}"
