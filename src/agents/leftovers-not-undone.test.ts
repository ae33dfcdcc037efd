import { describe, expect, it } from 'vitest';
import { leftoversNotUndone } from './run-agent.js';

describe('leftoversNotUndone: by the record\'s `stayed` mark, never by its wording', () => {
  it('keeps the after-run records marked stayed, whatever their reason says; ignores tool refusals and undone changes', () => {
    const stayed = { tool: 'sandbox', code: 'SANDBOX_SOLO_LEFTOVER_QUARANTINED', reason: 'left as it is: look at it', target: 'a.bin', stayed: true as const };
    const undone = { tool: 'sandbox', code: 'SANDBOX_SOLO_LEFTOVER_QUARANTINED', reason: 'text that says it could not be moved out, quoted from a file name', target: 'b' };
    const refused = { tool: 'bash', code: 'JAIL_BASH_ESCAPE', reason: 'could not be moved out', stayed: true as const };
    expect(leftoversNotUndone([stayed, undone, refused])).toEqual([stayed]);
  });
});
