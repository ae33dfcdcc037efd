import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { EventBus } from '../src/engine/events.js';
import { createGit } from '../src/git/git-cli.js';
import { attachTracing } from '../src/observability/tracing.js';
import { runWave } from '../src/orchestrator/run-wave.js';
import { createObservedWave } from './support/observability-wave.js';

// Issue 14 item 6: one OpenTelemetry trace per run (standard API), received by the SDK's
// in-memory exporter for a real script wave: the run, the wave, each agent, its tool calls, gates.

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe('OpenTelemetry trace of a run', () => {
  it('a script wave gives one trace: run → wave → agents → tool calls, and the gates', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const wave = await createObservedWave('traced');
    const bus = new EventBus();
    const tracing = attachTracing(bus, { tracer: provider.getTracer('polywave-test'), name: 'run-wave', runId: 'run-1' });
    const result = await runWave({ implPath: wave.implPath, wave: 1, model: `script:${wave.scriptPath}`, env: wave.repo.env, events: bus, skipCritic: true, gitAt: (directory) => createGit(directory, { env: wave.repo.env }) });
    tracing.close();
    expect(result.success).toBe(true);
    await provider.forceFlush();
    const spans = exporter.getFinishedSpans();
    // One trace.
    expect(new Set(spans.map((span) => span.spanContext().traceId)).size).toBe(1);
    const byName = (name: string) => spans.filter((span) => span.name === name);
    const [root] = byName('polywave run-wave');
    expect(root).toBeDefined();
    expect(parentOf(root!)).toBeUndefined();
    expect(root!.attributes['polywave.run_id']).toBe('run-1');
    const [waveSpan] = byName('wave 1 (traced)');
    expect(waveSpan, spans.map((span) => span.name).join(', ')).toBeDefined();
    expect(parentOf(waveSpan!)).toBe(root!.spanContext().spanId);
    expect(waveSpan!.attributes).toMatchObject({ 'polywave.slug': 'traced', 'polywave.wave': 1, 'polywave.success': true, 'polywave.state': 'WAVE_VERIFIED' });
    for (const id of ['A', 'B']) {
      const [agent] = byName(`agent ${id}`);
      expect(agent, id).toBeDefined();
      expect(parentOf(agent!)).toBe(waveSpan!.spanContext().spanId);
      expect(agent!.attributes).toMatchObject({ 'polywave.agent': id, 'polywave.status': 'complete' });
      // Its tool calls (write_file, git commit, the report) are children of the agent's span, inside its time.
      const tools = spans.filter((span) => span.name.startsWith('tool ') && parentOf(span) === agent!.spanContext().spanId);
      expect(tools.length, id).toBeGreaterThanOrEqual(3);
    }
    // The gate the wave ran after the merge (test_command) is a span of the wave, passed.
    const gates = spans.filter((span) => span.name.startsWith('gate '));
    expect(gates.length).toBeGreaterThanOrEqual(1);
    expect(gates.every((span) => parentOf(span) === waveSpan!.spanContext().spanId || parentOf(span) === root!.spanContext().spanId)).toBe(true);
    // E40 activity events ride on the spans as span events.
    expect(spans.flatMap((span) => span.events.map((event) => event.name))).toContain('wave_merge');
  }, 180_000);
});
