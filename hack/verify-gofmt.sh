#!/usr/bin/env bash
# Fails when a Go file is not gofmt-formatted.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
bad=$(git ls-files --cached --others --exclude-standard '*.go' | xargs -r gofmt -l)
if [ -n "$bad" ]; then
  echo "gofmt needed on:" >&2
  echo "$bad" >&2
  exit 1
fi
