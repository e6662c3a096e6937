#!/usr/bin/env bash
# Regenerates build/*.abi, build/*.bin and the abigen v2 Go bindings
# (testtoken.go, mockaggregator.go, forwarder.go, sweeper.go) from src/*.sol.
#
# Idempotent: running it twice yields byte-identical output.
#
# Env:
#   ABIGEN  path to abigen (default: <repo>/.tools/abigen, installed with
#           GOBIN=$PWD/.tools go install github.com/ethereum/go-ethereum/cmd/abigen@<go.mod version>)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

ABIGEN="${ABIGEN:-$here/../../../.tools/abigen}"
if [[ ! -x "$ABIGEN" ]]; then
  echo "generate.sh: abigen not found at $ABIGEN (set ABIGEN or install it into .tools/)" >&2
  exit 1
fi

if [[ ! -d node_modules ]]; then
  npm ci --silent --no-audit --no-fund
fi

node compile.mjs

# contract name in build/ -> Go output file
bind() {
  local name="$1" out="$2"
  "$ABIGEN" --v2 \
    --abi "build/$name.abi" \
    --bin "build/$name.bin" \
    --pkg contracts \
    --type "$name" \
    --out "$out"
  chmod 0644 "$out" # abigen creates files 0600
}

bind TestToken testtoken.go
bind MockAggregator mockaggregator.go
bind Forwarder forwarder.go
bind Sweeper sweeper.go
