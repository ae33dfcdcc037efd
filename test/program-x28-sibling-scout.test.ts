/**
 * Outside attack X28-12 (issue 11): the Scouts of a PROGRAM tier run at once in the main checkout. One of
 * them (its bash, with a computed path the static check cannot see) waited until its sibling had committed
 * its reviewed plan, then rewrote a task in that plan: the change was read and merged. Now each Scout
 * commits only the plan it validated, and program-execute puts every doc of the tier back to its commit
 * after the scouting (the changed copy to the quarantine). Real git, the real tier loop, scripted agents
 * through the CLI — without the OS sandbox (POLYWAVE_SANDBOX=off): a sandboxed Scout cannot write the checkout
 * but its own plan at all (X30, test/run-scout.test.ts), so these checks guard a run without it.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runProgramDemo } from '../src/demo/run-program-demo.js';
import { runCli } from './support/cli.js';
import { makeTempDir } from './support/temp.js';

const gitEnv = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull };
const tempRoot = makeTempDir('polywave-program-x28-');

describe('a tier Scout rewriting its sibling\'s committed plan (X28-12)', () => {
  it('the sibling\'s plan as its Scout validated it is what runs and is merged; the changed copy is kept in the quarantine', async () => {
    const demo = await runProgramDemo({ env: { ...process.env, ...gitEnv }, dir: path.join(tempRoot, 'demo'), setupOnly: true });
    // pricing's Scout: waits for catalog's Scout to commit its plan, then rewrites a task in it (a computed path).
    const plant = [
      "const fs=require('fs'),cp=require('child_process');const f='docs/IMPL/IMPL-'+'cata'+'log.yaml';",
      "for(let i=0;i<600;i++){let s='';try{s=cp.execSync('git log --format=%s',{encoding:'utf8'})}catch{}if(s.includes('scout IMPL for catalog'))break;cp.execSync('sleep 0.1')}",
      "fs.writeFileSync(f,fs.readFileSync(f,'utf8').replace(/task: .*/,'task: PLANTED-BY-SIBLING-SCOUT'));",
    ].join('');
    const script = readFileSync(demo.script, 'utf8');
    const anchor = '  scout@pricing:\n    steps:\n';
    expect(script).toContain(anchor);
    // (base64 and eval, as the attacker did: the jail's static check refuses child_process in a one-liner; the sandbox is the boundary)
    const command = `node -e "eval(Buffer.from('${Buffer.from(plant).toString('base64')}','base64').toString())"`;
    writeFileSync(demo.script, script.replace(anchor, `${anchor}      - bash: ${JSON.stringify(command)}\n`));

    const run = await runCli(['program-execute', 'docs/PROGRAM/PROGRAM-shop.yaml', '--auto', '--model', `script:${demo.script}`, '--no-critic'], { cwd: demo.repo, env: { ...gitEnv, POLYWAVE_SANDBOX: 'off' }, timeoutMs: 300_000 });
    expect(run.code, `${run.stdout.slice(-2000)}\n${run.stderr.slice(-4000)}`).toBe(0);
    // Undone by whichever step saw it first: catalog's own run-scout (the plant landed while it committed) or
    // program-execute after the scouting (it landed after).
    expect(run.stderr).toMatch(/IMPL-catalog\.yaml was changed after its Scout committed it|IMPL-catalog\.yaml was changed by another process after it was checked/);
    const history = execFileSync('git', ['log', '--all', '-p'], { cwd: demo.repo, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    expect(history).not.toContain('PLANTED-BY-SIBLING-SCOUT');
    const quarantine = path.join(demo.repo, '.git', 'polywave', 'quarantine');
    const kept = readdirSync(quarantine, { recursive: true }).map(String).filter((entry) => entry.endsWith('IMPL-catalog.yaml.quarantined'));
    expect(kept.length).toBe(1);
    expect(readFileSync(path.join(quarantine, kept[0]!), 'utf8')).toContain('PLANTED-BY-SIBLING-SCOUT');
  }, 400_000);
});
