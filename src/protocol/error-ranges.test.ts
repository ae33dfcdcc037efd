import { describe, expect, it } from 'vitest';
import { parseErrorRanges } from './error-ranges.js';

describe('parseErrorRanges', () => {
  it('reads the ranges of the package comment, in order, up to the package clause', () => {
    expect(parseErrorRanges('// Code ranges:\n//\n//\tV001-V099: Validation errors\n//  B001 - B099 : Build errors\n//\tA001-B099: mixed\npackage result\n//\tZ001-Z099: later\n')).toEqual([
      { prefix: 'V', start: 1, end: 99, description: 'Validation errors' },
      { prefix: 'B', start: 1, end: 99, description: 'Build errors' },
    ]);
  });
});
