#!/bin/sh
# Polywave Claude Code hook launcher: runs `polywave hook <event>` with the hook payload on stdin.
# Which polywave, first match wins:
#   1. $POLYWAVE_BIN (an executable);
#   2. the CLI of the npm package this file ships in (<package>/claude-plugin/hooks/ → <package>/bin/polywave.js),
#      so the hooks always match the plugin's version — through its native client
#      (<package>/dist/native/polywave-client, compiled at install when a C compiler was there): a hook
#      runs on every tool call, and the client answers from a warm resident server (~15 ms instead
#      of a Node start, docs/performance.md), or runs the same node command itself when it cannot;
#   3. the project's own install: $CLAUDE_PROJECT_DIR/node_modules/.bin/polywave-fast, else …/polywave;
#   4. `polywave-fast`, else `polywave` on PATH (npm i -g polywave).
# POLYWAVE_RESIDENT=0 keeps every call in a fresh node. No npx fallback: even with --no-install, npx
# asks the registry for a package it cannot find locally, and a hook must not touch the network.
# When none is found the hook exits 1: Claude Code reports a hook error and goes on (fail open) —
# `polywave init --claude` and `polywave verify-install` tell you when that is the case.
here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
if [ -n "${POLYWAVE_BIN:-}" ]; then exec "$POLYWAVE_BIN" hook "$@"; fi
package="$here/../.."
if [ -f "$package/bin/polywave.js" ] && grep -q '"name": *"polywave"' "$package/package.json" 2>/dev/null; then
  if [ -x "$package/dist/native/polywave-client" ]; then exec "$package/dist/native/polywave-client" hook "$@"; fi
  exec node "$package/bin/polywave.js" hook "$@"
fi
for name in polywave-fast polywave; do
  if [ -n "${CLAUDE_PROJECT_DIR:-}" ] && [ -x "$CLAUDE_PROJECT_DIR/node_modules/.bin/$name" ]; then
    exec "$CLAUDE_PROJECT_DIR/node_modules/.bin/$name" hook "$@"
  fi
done
for name in polywave-fast polywave; do
  if command -v "$name" >/dev/null 2>&1; then exec "$name" hook "$@"; fi
done
echo "polywave hook: the polywave CLI was not found (set POLYWAVE_BIN, or npm i -D polywave / npm i -g polywave)" >&2
exit 1
