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
# Process checks and the cluster lock, shared by up.sh and down.sh (and tested by
# e2e/cluster/proc_test.go). Sourced, never run; needs nothing but bash and /proc.
#
# up.sh starts a component as `setsid BIN ARGS... &`. Bash forks, the child sets up its
# redirections and execs setsid, which execs BIN; the PID stays the same throughout. Until the
# exec the PID shows the forking shell's command line, and on a loaded machine that can last
# long enough to be seen. So two questions are kept apart:
#   proc_alive  is the process there at all (liveness, while a component starts);
#   proc_is     is it the component's binary, started for this cluster (identity: whether to
#               reuse it, whether down.sh may signal it). Only true once the exec happened.

# proc_alive <pid>: the process exists and has not exited. A zombie (state Z, or X while it is
# reaped) has exited; only its parent has not collected its status yet.
proc_alive() {
  local stat
  [[ $1 =~ ^[1-9][0-9]*$ ]] || return 1
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  # "pid (comm) state ...": comm may contain spaces and parentheses, so cut at the last ") ".
  stat=${stat##*) }
  [[ ${stat:0:1} != [ZX] ]]
}

# proc_is <pid> <name> <dir>: the process runs the binary <name> (its argv[0] ends in /<name>)
# with an argument naming a path under <dir>. False before the exec (argv[0] is still the shell
# or setsid) and for any unrelated process that got the PID later.
proc_is() {
  local pid=$1 name=$2 dir=$3 arg args=()
  proc_alive "${pid}" || return 1
  { mapfile -d '' -t args <"/proc/${pid}/cmdline"; } 2>/dev/null || return 1
  ((${#args[@]} > 0)) || return 1
  [[ ${args[0]##*/} == "${name}" ]] || return 1
  for arg in "${args[@]}"; do
    [[ ${arg} == *"${dir}/"* ]] && return 0
  done
  return 1
}

# proc_wait_exec <pid> <name> <dir> <timeout seconds>: waits until the process just started as
# <pid> has exec'd <name> (proc_is). Returns 1 if it exited first, 2 if the deadline passed.
proc_wait_exec() {
  local pid=$1 name=$2 dir=$3 deadline=$((SECONDS + $4))
  until proc_is "${pid}" "${name}" "${dir}"; do
    proc_alive "${pid}" || return 1
    ((SECONDS < deadline)) || return 2
    sleep 0.05
  done
}

# lock_cluster <dir> <timeout seconds>: takes the cluster's lock on file descriptor 8, waiting up
# to the timeout (the caller closes 8 for the components it starts, or they would hold the lock
# for as long as they run). up.sh and down.sh take turns on it, so a stop never interleaves with
# a start. down.sh --wipe deletes the folder, lock file included, while a waiting up.sh holds the
# old file open; a lock on a deleted file excludes nobody, so then the lock is taken again on the
# file that is there now.
lock_cluster() {
  local dir=$1 timeout=$2
  while :; do
    mkdir -p "${dir}"
    exec 8>"${dir}/cluster-up.lock"
    flock --timeout "${timeout}" 8 || return 1
    if [[ /proc/self/fd/8 -ef "${dir}/cluster-up.lock" ]]; then
      return 0
    fi
  done
}
