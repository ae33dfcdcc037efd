// Preloaded with `node --import` by test/cli-startup.test.ts: records the URL of every module the
// process loads through the ESM loader (our bundle's chunks, packages imported at run time,
// built-ins) into the file named by POLYWAVE_TRACE_MODULES, one per line.
import { register } from 'node:module';

register(new URL('./trace-modules-hooks.mjs', import.meta.url), { data: { file: process.env.POLYWAVE_TRACE_MODULES } });
