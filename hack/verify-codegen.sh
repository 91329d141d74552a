#!/usr/bin/env bash
# Fails when the generated deepcopy code or clients under apis/ are stale.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/verify-generated.sh" update-codegen.sh apis
