#!/usr/bin/env bash
# Regenerates docs/flags.md from the components' flag registration.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
mkdir -p docs
go run ./hack/flagsdocs >docs/flags.md.tmp
mv docs/flags.md.tmp docs/flags.md
