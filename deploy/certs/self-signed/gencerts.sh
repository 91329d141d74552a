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

# Creates a self-signed CA and a serving certificate for the admission
# controller's webhook Service and stores them in the secret the Deployment
# mounts (kube-system/vpa-tls-certs, keys caCert.pem, serverCert.pem,
# serverKey.pem, as upstream). Needs openssl and kubectl.
#   deploy/certs/self-signed/gencerts.sh [namespace] [service]
set -euo pipefail

ns=${1:-kube-system}
svc=${2:-vpa-webhook}
kubectl=${KUBECTL:-kubectl}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=openvpa_webhook_ca" \
  -keyout "$dir/caKey.pem" -out "$dir/caCert.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=$svc.$ns.svc" \
  -keyout "$dir/serverKey.pem" -out "$dir/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s,DNS:%s.%s,DNS:%s.%s.svc\n' "$svc" "$svc" "$ns" "$svc" "$ns" >"$dir/ext.cnf"
openssl x509 -req -in "$dir/server.csr" -CA "$dir/caCert.pem" -CAkey "$dir/caKey.pem" -CAcreateserial \
  -days 3650 -extfile "$dir/ext.cnf" -out "$dir/serverCert.pem" 2>/dev/null

"$kubectl" -n "$ns" create secret generic vpa-tls-certs \
  --from-file="$dir/caCert.pem" --from-file="$dir/serverCert.pem" --from-file="$dir/serverKey.pem" \
  --dry-run=client -o yaml | "$kubectl" apply -f -
