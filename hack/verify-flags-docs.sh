#!/usr/bin/env bash
# Fails when docs/flags.md does not match the components' flags.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/verify-generated.sh" update-flags-docs.sh docs/flags.md
