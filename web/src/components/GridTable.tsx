// The views' data tables: <table class="grid"> with one header row and the caller's rows.

import type { ComponentChildren } from 'preact';

/** A `table.grid` with `headers` as its one header row ('' = an empty header cell) and `children` as its body rows. */
export function GridTable({ headers, testid, children }: { headers: string[]; testid?: string; children: ComponentChildren }) {
  return (
    <table class="grid" data-testid={testid}>
      <thead>
        <tr>
          {headers.map((header, index) => (
            <th key={index}>{header === '' ? null : header}</th>
          ))}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}
