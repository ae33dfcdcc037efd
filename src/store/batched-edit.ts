import type { ImplParseResult } from '../protocol/parse-impl.js';
import type { YamlEdit } from '../protocol/yaml/index.js';
import { editImpl } from './manifest-file.js';

/** One change submitted to a {@link BatchedImplEditor}: decides its edits from the current manifest, or throws to refuse. */
export type EditPlan<Outcome> = (parsed: ImplParseResult) => { edits: YamlEdit[]; outcome: Outcome };

/** Coalesces concurrent edits of one IMPL into as few locked writes as possible. */
export interface BatchedImplEditor {
  submit<Outcome>(plan: EditPlan<Outcome>): Promise<Outcome>;
}

interface Pending {
  plan: EditPlan<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for one process's edits of one manifest (e.g. sixteen agents reporting within a
 * few milliseconds): edits that arrive while a write is in flight are applied together in the
 * next one — one lock, one parse, one verified write for the whole group instead of one each.
 * Every plan still sees the manifest as it is on disk under the lock; a plan that throws refuses
 * only its own change (the others in the group are written). Cross-process safety is the lock's,
 * as for every write.
 */
export function createBatchedImplEditor(implPath: string): BatchedImplEditor {
  let queue: Pending[] = [];
  let flushing = false;

  const flush = async (): Promise<void> => {
    flushing = true;
    try {
      while (queue.length > 0) {
        const group = queue;
        queue = [];
        const settled: Array<{ pending: Pending; ok: boolean; value: unknown }> = [];
        try {
          await editImpl(implPath, (parsed) => {
            settled.length = 0;
            const edits: YamlEdit[] = [];
            for (const pending of group) {
              try {
                const planned = pending.plan(parsed);
                edits.push(...planned.edits);
                settled.push({ pending, ok: true, value: planned.outcome });
              } catch (error) {
                settled.push({ pending, ok: false, value: error });
              }
            }
            return { edits, outcome: undefined };
          });
          for (const item of settled) (item.ok ? item.pending.resolve : item.pending.reject)(item.value);
        } catch (error) {
          // The write itself failed (lock timeout, unreadable file): every change of the group fails.
          for (const pending of group) pending.reject(error);
        }
      }
    } finally {
      flushing = false;
    }
  };

  return {
    submit<Outcome>(plan: EditPlan<Outcome>): Promise<Outcome> {
      return new Promise<Outcome>((resolve, reject) => {
        queue.push({ plan: plan as EditPlan<unknown>, resolve: resolve as (value: unknown) => void, reject });
        if (!flushing) void flush();
      });
    },
  };
}
