/** An allocated error-code range (Go's `ErrorCodeRange`). */
export interface ErrorCodeRange {
  prefix: string;
  start: number;
  end: number;
  description: string;
}

/**
 * The error-code ranges declared in the package comment of a Go error registry
 * (`pkg/result/codes.go`): lines like `//	V001-V099: Validation errors` before the `package`
 * clause. The prefix letters must match on both ends. In declaration order.
 */
export function parseErrorRanges(text: string): ErrorCodeRange[] {
  const ranges: ErrorCodeRange[] = [];
  for (const line of text.split('\n')) {
    if (/^\s*package\s/.test(line)) break;
    const match = /^\s*(?:\/\/)?\s*([A-Z]+)(\d+)\s*-\s*([A-Z]+)(\d+)\s*:\s*(.+?)\s*$/.exec(line);
    if (!match || match[1] !== match[3]) continue;
    ranges.push({ prefix: match[1]!, start: Number(match[2]), end: Number(match[4]), description: match[5]! });
  }
  return ranges;
}
