// Runs `polywave <name> --help` for every name in argv[3] (JSON) inside ONE process, through the CLI
// entry the bin would load (argv[2]), and prints [{ name, code, stdout, stderr }] as JSON. One Node start
// instead of one per command: the suite's --help check costs one process, not a hundred.
const [entry, namesJson] = process.argv.slice(2);
const cli = await import(entry);
const results = [];
const write = { stdout: process.stdout.write.bind(process.stdout), stderr: process.stderr.write.bind(process.stderr) };
for (const name of JSON.parse(namesJson)) {
  const captured = { stdout: '', stderr: '' };
  process.stdout.write = (chunk) => ((captured.stdout += chunk), true);
  process.stderr.write = (chunk) => ((captured.stderr += chunk), true);
  let code;
  try {
    code = await cli.main([name, '--help']);
  } catch (error) {
    captured.stderr += error instanceof Error ? error.stack : String(error);
    code = -1;
  } finally {
    process.stdout.write = write.stdout;
    process.stderr.write = write.stderr;
  }
  results.push({ name, code, ...captured });
}
process.stdout.write(JSON.stringify(results));
