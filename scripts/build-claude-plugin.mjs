#!/usr/bin/env node
// Writes claude-plugin/agents/*.md from our role prompts (src/cli/claude-plugin-agents.ts) and
// keeps claude-plugin/.claude-plugin/plugin.json's version equal to package.json's.
// Run after `npm run build`:
//
//   node scripts/build-claude-plugin.mjs           # write
//   node scripts/build-claude-plugin.mjs --check   # exit 1 when a file is out of date
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pluginRoot = path.join(repoRoot, 'claude-plugin');
const check = process.argv.includes('--check');
const { renderPluginAgents } = await import(path.join(repoRoot, 'dist/cli/claude-plugin-agents.js'));

const wanted = new Map();
for (const agent of renderPluginAgents()) wanted.set(path.join('agents', agent.file), agent.content);
const manifestPath = path.join('.claude-plugin', 'plugin.json');
const manifest = JSON.parse(readFileSync(path.join(pluginRoot, manifestPath), 'utf8'));
manifest.version = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')).version;
wanted.set(manifestPath, `${JSON.stringify(manifest, null, 2)}\n`);

const stale = [];
for (const [relative, content] of wanted) {
  const filePath = path.join(pluginRoot, relative);
  const current = existsSync(filePath) ? readFileSync(filePath, 'utf8') : undefined;
  if (current === content) continue;
  stale.push(relative);
  if (!check) {
    mkdirSync(path.dirname(filePath), { recursive: true });
    writeFileSync(filePath, content);
  }
}
const extra = readdirSync(path.join(pluginRoot, 'agents')).filter((name) => !wanted.has(path.join('agents', name)));
if (check) {
  if (stale.length > 0 || extra.length > 0) {
    console.error(`claude-plugin is out of date: ${[...stale, ...extra.map((name) => `agents/${name} (not generated)`)].join(', ')} — run node scripts/build-claude-plugin.mjs`);
    process.exit(1);
  }
  console.error('claude-plugin is up to date');
} else {
  console.error(stale.length === 0 ? 'claude-plugin: nothing to change' : `claude-plugin: wrote ${stale.join(', ')}`);
}
