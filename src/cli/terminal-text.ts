import type { CommandIo } from './io.js';

/**
 * What a terminal acts on instead of showing: C0 controls except tab and newline (ESC starts OSC 52
 * clipboard writes, OSC 8 links, cursor moves; BEL ends OSC), a carriage return not followed by a
 * newline (rewrites the line), DEL, and C1 (U+0080–U+009F: U+009B is CSI, U+009D OSC on terminals
 * that honour 8-bit controls).
 */
// (and the bidirectional overrides and isolates, U+202A–U+202E and U+2066–U+2069: they reorder what the operator
// reads, "Trojan Source" style — shown as \u escapes like C1, which JSON parses back)
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const terminalControl = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]|\r(?!\n)/g;

function escapeControl(character: string): string {
  if (character === '\r') return '\\r';
  const code = character.charCodeAt(0);
  // C1 and DEL as \u00XX, the escape JSON uses: a JSON document written through the same io (JSON.stringify
  // leaves them raw) still parses to the original text; C0 never reaches here from JSON.stringify.
  return code < 0x20 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/**
 * `text` made safe for a terminal: every control character a terminal would act on is shown as an
 * escape (`\x1b`, `\x07`, `\r`, `\u009b`) — never removed, so the operator sees that something was
 * there. Newlines, tabs and CRLF line ends stay. Idempotent: the result holds no control character.
 * Outside attack X21-07: an agent's notes carried OSC 52 (clipboard), OSC 0/8, SGR 8 and line rewrites.
 */
export function escapeTerminalText(text: string): string {
  return text.replace(terminalControl, escapeControl);
}

/** `text` on one line: a newline in an agent's or a model's text shown as `\n`, so it cannot add a line that reads like polywave's own. */
export function oneTerminalLine(text: string): string {
  return text.replace(/\r?\n/g, '\\n');
}

/**
 * The io every command gets from main(): whatever it prints on stdout/stderr (and the question it
 * asks) goes through escapeTerminalText — agent, model, git and tool text included, in every
 * command, text and JSON alike (JSON.stringify already escapes C0; C1 becomes `\u00XX`, which parses
 * back to the same string). polywave's own control sequences (the live progress redraw) go through
 * `terminalControl`, the only unescaped path.
 */
export function terminalSafeIo(io: CommandIo): CommandIo {
  // A nested main() (the resident server, tests): already safe.
  if (io.terminalControl !== undefined) return io;
  const { ask } = io;
  return {
    ...io,
    stdout: (text) => io.stdout(escapeTerminalText(text)),
    stderr: (text) => io.stderr(escapeTerminalText(text)),
    terminalControl: (sequence) => io.stderr(sequence),
    ...(ask ? { ask: (question: string) => ask(escapeTerminalText(question)) } : {}),
  };
}
