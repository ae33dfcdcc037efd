#!/bin/sh
# Polywave Claude Code hook launcher: runs `polywave hook <event>` with the hook payload on stdin.
# Which polywave, first match wins:
#   1. $POLYWAVE_BIN (an executable);
#   2. the CLI of the npm package this file ships in (<package>/claude-plugin/hooks/ → <package>/bin/polywave.js),
#      so the hooks always match the plugin's version;
#   3. the project's own install: $CLAUDE_PROJECT_DIR/node_modules/.bin/polywave;
#   4. `polywave` on PATH (npm i -g polywave).
# No npx fallback: even with --no-install, npx asks the registry for a package it cannot find
# locally, and a hook must not touch the network.
# When none is found the hook exits 1: Claude Code reports a hook error and goes on (fail open) —
# `polywave init --claude` and `polywave verify-install` tell you when that is the case.
here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
if [ -n "${POLYWAVE_BIN:-}" ]; then exec "$POLYWAVE_BIN" hook "$@"; fi
package="$here/../.."
if [ -f "$package/bin/polywave.js" ] && grep -q '"name": *"polywave"' "$package/package.json" 2>/dev/null; then
  exec node "$package/bin/polywave.js" hook "$@"
fi
if [ -n "${CLAUDE_PROJECT_DIR:-}" ] && [ -x "$CLAUDE_PROJECT_DIR/node_modules/.bin/polywave" ]; then
  exec "$CLAUDE_PROJECT_DIR/node_modules/.bin/polywave" hook "$@"
fi
if command -v polywave >/dev/null 2>&1; then exec polywave hook "$@"; fi
echo "polywave hook: the polywave CLI was not found (set POLYWAVE_BIN, or npm i -D polywave / npm i -g polywave)" >&2
exit 1
