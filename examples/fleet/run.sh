#!/usr/bin/env bash
# The fleet example in one command (README.md): nats-server, redis-server, three engines, a worker
# on each and an HTTP load through all three. run.ts does the work and stops every process it
# started on exit, Ctrl-C included; this script only picks a Node that runs TypeScript: the one
# `npm install` puts in node_modules/.bin (Node 24), else the node on PATH.
set -euo pipefail
here="$(cd "${BASH_SOURCE[0]%/*}" && pwd)"
node="$here/../../node_modules/.bin/node"
[[ -x "$node" ]] || node=node
exec "$node" "$here/run.ts" "$@"
