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

# Creates the local control plane's PKI with openssl into the given folder (default
# $CLUSTER_DIR/pki): the cluster CA, the front-proxy CA, serving and client certificates, and the
# ServiceAccount signing key pair. Does nothing if the folder is already complete.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PKI_DIR=${1:-${CLUSTER_DIR}/pki}
DAYS=3650
LOOPBACK_SANS="IP:127.0.0.1,IP:::1,DNS:localhost"

# ca <name> <common name>
ca() {
  openssl req -x509 -newkey rsa:2048 -nodes -days "${DAYS}" -subj "/CN=$2" \
    -keyout "$1.key" -out "$1.crt" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
}

# leaf <name> <ca name> <subject> <extended key usage> [subject alt names]
leaf() {
  local name=$1 issuer=$2 subject=$3 usage=$4 sans=${5:-}
  openssl req -newkey rsa:2048 -nodes -subj "${subject}" -keyout "${name}.key" -out "${name}.csr" 2>/dev/null
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=${usage}"
    if [[ -n "${sans}" ]]; then echo "subjectAltName=${sans}"; fi
  } >"${name}.ext"
  openssl x509 -req -days "${DAYS}" -in "${name}.csr" -CA "${issuer}.crt" -CAkey "${issuer}.key" \
    -CAcreateserial -extfile "${name}.ext" -out "${name}.crt" 2>/dev/null
  rm -f "${name}.csr" "${name}.ext"
}

# node_certs: the real node's (node.sh) kubelet client and serving certificates and kube-proxy's
# client certificate, made once per node name and address.
node_certs() {
  local marker=.complete-node-${NODE_NAME}-${NODE_IP}
  [[ -f "${marker}" ]] && return 0
  leaf node-client ca "/O=system:nodes/CN=system:node:${NODE_NAME}" clientAuth
  leaf node-serving ca "/CN=${NODE_NAME}" serverAuth "IP:${NODE_IP},DNS:${NODE_NAME}"
  leaf kube-proxy ca /CN=system:kube-proxy clientAuth
  touch "${marker}"
}

if [[ -f "${PKI_DIR}/.complete" ]]; then
  cd "${PKI_DIR}"
  umask 077
  node_certs
  exit 0
fi
mkdir -p "${PKI_DIR}"
cd "${PKI_DIR}"
umask 077

ca ca kubernetes-ca
ca front-proxy-ca front-proxy-ca
leaf apiserver ca /CN=kube-apiserver serverAuth \
  "${LOOPBACK_SANS},IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
leaf admin ca "/O=system:masters/CN=kubernetes-admin" clientAuth
leaf apiserver-kubelet-client ca "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
leaf controller-manager ca /CN=system:kube-controller-manager clientAuth
leaf scheduler ca /CN=system:kube-scheduler clientAuth
leaf front-proxy-client front-proxy-ca /CN=front-proxy-client clientAuth
# One loopback serving certificate for everything else on 127.0.0.1: the controller-manager and
# scheduler ports, kwok's fake kubelet, metrics-server (the aggregator checks <svc>.<ns>.svc) and
# admission webhooks that tests run on the host.
leaf serving ca /CN=localhost serverAuth,clientAuth \
  "${LOOPBACK_SANS},DNS:metrics-server.kube-system.svc,DNS:*.kube-system.svc,DNS:*.default.svc"
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
node_certs
touch .complete
