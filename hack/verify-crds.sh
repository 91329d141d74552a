#!/usr/bin/env bash
# Fails when deploy/crds/ does not match the markers in apis/.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/verify-generated.sh" update-crds.sh deploy/crds
