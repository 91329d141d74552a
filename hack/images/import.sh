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

# Imports the image tarballs that `make images` wrote (listed in _output/images/images.txt) into
# containerd's k8s.io namespace, where the kubelet's CRI finds them (pinned, so its image garbage
# collection leaves them), and checks that containerd then lists each under its reference with
# the digest the tarball holds.
#
#   CTR=/path/to/ctr CONTAINERD_ADDRESS=/run/containerd/containerd.sock hack/images/import.sh
#   hack/images/import.sh CTR ADDRESS [TARBALL...]      # the same, as arguments
#
# Sourced, it defines openvpa_import_images CTR ADDRESS [TARBALL...] and does nothing else.
# IMAGES_DIR selects another folder than _output/images; SNAPSHOTTER the snapshotter to unpack
# into (ctr's default, overlayfs, unless set). Tarballs given are imported without the digest
# check, unless images.txt lists them.

openvpa_import_images() {
  local ctr=${1:?usage: openvpa_import_images CTR ADDRESS [TARBALL...]}
  local address=${2:?usage: openvpa_import_images CTR ADDRESS [TARBALL...]}
  shift 2
  local root dir list
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  dir=${IMAGES_DIR:-${root}/_output/images}
  list=${dir}/images.txt
  [[ -x "${ctr}" ]] || { echo "import.sh: ctr ${ctr} is not an executable" >&2; return 1; }
  [[ -S "${address}" ]] || { echo "import.sh: ${address} is not a socket (is containerd running?)" >&2; return 1; }

  local -a files=("$@")
  if [[ ${#files[@]} -eq 0 ]]; then
    [[ -f "${list}" ]] || { echo "import.sh: ${list} is missing; run make images first" >&2; return 1; }
    local ref digest file
    while read -r ref digest file; do
      files+=("${dir}/${file}")
    done <"${list}"
  fi

  local -a ctr_cmd=("${ctr}" --address "${address}" --namespace k8s.io)
  # Pinned, so the kubelet's image garbage collection never deletes what no registry can give back.
  local -a import_flags=(--label io.cri-containerd.pinned=pinned)
  [[ -n "${SNAPSHOTTER:-}" ]] && import_flags+=(--snapshotter "${SNAPSHOTTER}")
  local f
  for f in "${files[@]}"; do
    echo "importing ${f}"
    "${ctr_cmd[@]}" images import "${import_flags[@]}" "${f}" >/dev/null ||
      { echo "import.sh: ctr images import ${f} failed" >&2; return 1; }
  done

  # Every listed image whose tarball was imported must now be there, with its digest.
  local listed failed=0
  listed=$("${ctr_cmd[@]}" images ls) || { echo "import.sh: ctr images ls failed" >&2; return 1; }
  if [[ -f "${list}" ]]; then
    while read -r ref digest file; do
      local wanted=0
      for f in "${files[@]}"; do
        [[ "$(realpath -m "${f}")" == "$(realpath -m "${dir}/${file}")" ]] && wanted=1
      done
      [[ ${wanted} -eq 1 ]] || continue
      local got
      got=$(awk -v ref="${ref}" '$1 == ref { print $3 }' <<<"${listed}")
      if [[ "${got}" != "${digest}" ]]; then
        echo "import.sh: ${ref}: containerd lists digest '${got}', the tarball holds ${digest}" >&2
        failed=1
      else
        echo "imported ${ref} ${digest}"
      fi
    done <"${list}"
  fi
  return "${failed}"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  if [[ $# -ge 2 ]]; then
    openvpa_import_images "$@"
  else
    openvpa_import_images "${CTR:?set CTR to the ctr binary}" "${CONTAINERD_ADDRESS:?set CONTAINERD_ADDRESS to the containerd socket}"
  fi
fi
