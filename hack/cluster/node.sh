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

# shellcheck shell=bash
# The real node: a kubelet with containerd and runc, and kube-proxy, joined to the local control
# plane beside the KWOK nodes. Sourced by up.sh (node_up) and down.sh (node_down), never run.
#
# The node lives in a network namespace of its own (NODE_NETNS), joined to the host by a veth
# pair (host NODE_HOST_IP, node NODE_IP). The kubelet, containerd, kube-proxy and every pod's
# network are in it, so the iptables rules and sysctls they set, and every address they use, stay
# there; the host only gains the veth, routes to the pod and Service ranges through it, and a
# forwarder from NODE_HOST_IP to the API server on loopback (socat). The kubelet does change a few
# host sysctls; their values before the first start are kept in NODE_DIR and node_down restores
# them. The node is tainted (openvpa.io/real-node=true:NoSchedule) and labelled, so only pods
# meant for it land there (deploy/overlays/local).

NODE_DIR=${CLUSTER_DIR}/node
NODE_LABEL=openvpa.io/real-node
# The kubelet's cgroups, under each cgroup v1 hierarchy (PID 1 is not systemd: cgroupfs driver).
NODE_CGROUP=openvpa-${NODE_NAME}
# Sysctls the kubelet sets on the host (it checks or sets them at start).
NODE_HOST_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

node_enabled() { [[ "${REAL_NODE}" == true ]]; }

# in_node <command...>: runs the command in the node's network namespace. Not `ip netns exec`,
# which also gives the command a mount namespace with a fresh /sys, without the cgroup mounts.
in_node() { nsenter --net="/run/netns/${NODE_NETNS}" "$@"; }

# node_packages: runc, the CNI plugins, socat and iptables from Debian, installed when missing.
node_packages() {
  local missing=()
  command -v runc >/dev/null || missing+=(runc)
  [[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
  command -v socat >/dev/null || missing+=(socat)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v conntrack >/dev/null || missing+=(conntrack)
  command -v ip >/dev/null || missing+=(iproute2)
  ((${#missing[@]} == 0)) && return 0
  install_packages "${missing[@]}"
}

# node_network: the namespace, the veth pair and the routes, made when missing.
node_network() {
  if [[ ! -e "/run/netns/${NODE_NETNS}" ]]; then
    ip netns add "${NODE_NETNS}"
  fi
  if ! ip link show "${NODE_HOST_IF}" >/dev/null 2>&1; then
    ip link add "${NODE_HOST_IF}" type veth peer name eth0 netns "${NODE_NETNS}"
    ip addr add "${NODE_HOST_IP}/30" dev "${NODE_HOST_IF}"
  fi
  ip link set "${NODE_HOST_IF}" up
  in_node ip link set lo up
  if ! in_node ip -4 addr show dev eth0 | grep -q "inet ${NODE_IP}/"; then
    in_node ip addr add "${NODE_IP}/30" dev eth0
  fi
  in_node ip link set eth0 up
  in_node ip route replace default via "${NODE_HOST_IP}"
  ip route replace "${NODE_POD_CIDR}" via "${NODE_IP}"
  ip route replace "${SERVICE_CIDR}" via "${NODE_IP}"
  # Forwarding is per namespace: the node routes between its pods, eth0 and Service IPs.
  in_node sysctl -qw net.ipv4.ip_forward=1
  in_node sysctl -qw net.ipv4.conf.all.route_localnet=1
}

# node_save_sysctls keeps the host's values of the sysctls the kubelet sets, once.
node_save_sysctls() {
  local f=${NODE_DIR}/host-sysctls name
  [[ -f "${f}" ]] && return 0
  for name in "${NODE_HOST_SYSCTLS[@]}"; do
    echo "${name}=$(sysctl -n "${name}")"
  done >"${f}.tmp"
  mv -f "${f}.tmp" "${f}"
}

node_restore_sysctls() {
  local f=${NODE_DIR}/host-sysctls line
  [[ -f "${f}" ]] || return 0
  while read -r line; do
    sysctl -qw "${line}" || true
  done <"${f}"
  rm -f "${f}"
}

node_cgroups() {
  local h
  for h in /sys/fs/cgroup/*/; do
    [[ -f "${h}cgroup.procs" ]] || continue
    mkdir -p "${h}${NODE_CGROUP}"
  done
}

node_configs() {
  mkdir -p "${NODE_DIR}/cni" "${NODE_DIR}/containerd" "${NODE_DIR}/kubelet" "${NODE_DIR}/pod-logs"
  # To the API server through the host end of the veth, its certificate checked for "kubernetes".
  write_kubeconfig "${NODE_DIR}/kubelet.kubeconfig" "system:node:${NODE_NAME}" "${PKI}/node-client.crt" "${PKI}/node-client.key" \
    "https://${NODE_HOST_IP}:${APISERVER_PORT}" kubernetes
  write_kubeconfig "${NODE_DIR}/kube-proxy.kubeconfig" system:kube-proxy "${PKI}/kube-proxy.crt" "${PKI}/kube-proxy.key" \
    "https://${NODE_HOST_IP}:${APISERVER_PORT}" kubernetes

  cat >"${NODE_DIR}/containerd.toml" <<TOML
version = 3
root = "${NODE_DIR}/containerd/root"
state = "${NODE_DIR}/containerd/state"

[grpc]
  address = "${NODE_DIR}/containerd.sock"

[ttrpc]
  address = "${NODE_DIR}/containerd.sock.ttrpc"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "${NODE_SANDBOX_IMAGE}"

[plugins."io.containerd.cri.v1.runtime"]
  # Root here lacks CAP_SYS_RESOURCE: runc cannot lower oom_score_adj below containerd's own.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        Root = "${NODE_DIR}/runc"
        SystemdCgroup = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "${NODE_DIR}/cni"

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
TOML

  cat >"${NODE_DIR}/cni/10-openvpa.conflist" <<CNI
{
  "cniVersion": "1.0.0",
  "name": "openvpa",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "${NODE_POD_CIDR}"}]], "routes": [{"dst": "0.0.0.0/0"}],
               "dataDir": "${NODE_DIR}/cni-ipam"}
    },
    {"type": "loopback"}
  ]
}
CNI

  cat >"${NODE_DIR}/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${NODE_IP}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: ${PKI}/node-serving.crt
tlsPrivateKeyFile: ${PKI}/node-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: ${PKI}/ca.crt}
authorization: {mode: AlwaysAllow}
containerRuntimeEndpoint: unix://${NODE_DIR}/containerd.sock
cgroupDriver: cgroupfs
cgroupRoot: /${NODE_CGROUP}
failCgroupV1: false
failSwapOn: false
podLogsDir: ${NODE_DIR}/pod-logs
registerWithTaints:
- {key: ${NODE_LABEL}, value: "true", effect: NoSchedule}
maxPods: 30
serializeImagePulls: false
# A shared disk: never evict for disk pressure, and never delete images.
evictionHard: {memory.available: "100Mi", nodefs.available: "0%", imagefs.available: "0%", nodefs.inodesFree: "0%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
YAML

  cat >"${NODE_DIR}/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: ${NODE_DIR}/kube-proxy.kubeconfig}
hostnameOverride: ${NODE_NAME}
clusterCIDR: ${NODE_POD_CIDR}
bindAddress: ${NODE_IP}
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# Leave the host's conntrack table size alone.
conntrack: {maxPerCore: 0, min: 0}
YAML
}

# node_kubernetes_endpoints points the kubernetes Service at the forwarder: the API server runs
# with --endpoint-reconciler-type=none and advertises loopback, which pods cannot reach.
node_kubernetes_endpoints() {
  kubectl apply --server-side --force-conflicts --field-manager=openvpa-cluster-up -f - >/dev/null <<YAML
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kubernetes-openvpa-node
  namespace: default
  labels:
    kubernetes.io/service-name: kubernetes
    endpointslice.kubernetes.io/managed-by: openvpa-cluster-up
addressType: IPv4
endpoints:
- addresses: ["${NODE_HOST_IP}"]
  conditions: {ready: true}
ports:
- {name: https, port: ${APISERVER_PORT}, protocol: TCP}
YAML
}

node_ready() {
  api_get "/api/v1/nodes/${NODE_NAME}" | grep -q '"type":"Ready","status":"True"'
}

# node_images imports the images `make images` wrote (hack/images/import.sh), if it has run.
node_images() {
  [[ -f "${REPO_ROOT}/_output/images/images.txt" ]] || return 0
  # shellcheck source=../images/import.sh
  source "${REPO_ROOT}/hack/images/import.sh"
  openvpa_import_images "${BIN_DIR}/ctr" "${NODE_DIR}/containerd.sock" >>"${LOGS}/ctr.log" 2>&1 ||
    fail_with_log ctr "could not import the images of _output/images"
}

node_up() {
  node_enabled || return 0
  node_packages
  mkdir -p "${NODE_DIR}"
  node_network
  node_save_sysctls
  node_cgroups
  node_configs
  step "real node network ${NODE_NETNS}: host ${NODE_HOST_IP}, node ${NODE_IP}, pods ${NODE_POD_CIDR}"

  start socat -lf "${LOGS}/socat.messages" \
    "TCP-LISTEN:${APISERVER_PORT},bind=${NODE_HOST_IP},fork,reuseaddr" "TCP:127.0.0.1:${APISERVER_PORT}"
  node_kubernetes_endpoints || fail_with_log socat "could not point the kubernetes Service at ${NODE_HOST_IP}"

  # containerd finds its shim on PATH.
  START_PREFIX=(nsenter --net="/run/netns/${NODE_NETNS}" env "PATH=${BIN_DIR}:${PATH}")
  start containerd --config "${NODE_DIR}/containerd.toml"
  START_PREFIX=()
  wait_ready containerd 60 "${BIN_DIR}/ctr" --address "${NODE_DIR}/containerd.sock" version
  node_images
  step "containerd ready in ${NODE_NETNS}"

  START_PREFIX=(nsenter --net="/run/netns/${NODE_NETNS}")
  start kubelet --config="${NODE_DIR}/kubelet.yaml" \
    --kubeconfig="${NODE_DIR}/kubelet.kubeconfig" --root-dir="${NODE_DIR}/kubelet" \
    --hostname-override="${NODE_NAME}" --node-ip="${NODE_IP}" \
    --node-labels="${NODE_LABEL}=true" --v=1
  start kube-proxy --config="${NODE_DIR}/kube-proxy.yaml" --v=1
  START_PREFIX=()
  wait_ready kubelet 120 node_ready
  wait_ready kube-proxy 60 in_node curl -sf --max-time 2 http://127.0.0.1:10256/healthz
  step "real node ${NODE_NAME} Ready (kubelet ${K8S_VERSION}, containerd ${CONTAINERD_VERSION}, $(runc --version | head -1))"
}

# node_pids <pattern>: the PIDs of processes whose command line contains the pattern.
node_pids() {
  local p cmd
  for p in /proc/[0-9]*; do
    cmd=$(tr '\0' ' ' <"${p}/cmdline" 2>/dev/null) || continue
    [[ ${cmd} == *"$1"* ]] && echo "${p#/proc/}"
  done
}

# node_down undoes node_up after down.sh stopped kube-proxy, the kubelet and containerd: it
# kills the pods' processes and containerd's shims, unmounts what they mounted under NODE_DIR,
# removes the node's cgroups, the namespace (and with it the veth pair and its routes) and
# restores the host sysctls. Safe to run again, and when there is no node.
node_down() {
  local h pid mnt
  [[ -d "${NODE_DIR}" ]] || return 0
  for h in /sys/fs/cgroup/*/"${NODE_CGROUP}"; do
    [[ -d "${h}" ]] || continue
    while read -r pid; do
      kill -KILL "${pid}" 2>/dev/null || true
    done < <(find "${h}" -name cgroup.procs -exec cat {} + 2>/dev/null)
  done
  for pid in $(node_pids "-address ${NODE_DIR}/containerd.sock"); do
    kill -KILL "${pid}" 2>/dev/null || true
  done
  while read -r mnt; do
    umount -l "${mnt}" 2>/dev/null || true
  done < <(findmnt -rn -o TARGET | grep -F "${NODE_DIR}/" | sort -r)
  for h in /sys/fs/cgroup/*/"${NODE_CGROUP}"; do
    [[ -d "${h}" ]] || continue
    find "${h}" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  if [[ -e "/run/netns/${NODE_NETNS}" ]]; then
    ip netns del "${NODE_NETNS}" || true
  fi
  ip link del "${NODE_HOST_IF}" 2>/dev/null || true
  node_restore_sysctls
  log "real node ${NODE_NAME}: pods, mounts, cgroups and namespace ${NODE_NETNS} removed"
}
