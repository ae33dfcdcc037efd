// Runs `polywave <args>` for every argument list in argv[3] (JSON: string[][]) one after the other inside
// ONE process, through the CLI entry the bin would load (argv[2]), and prints [{ args, code, stdout, stderr }]
// as JSON. For checks over every command (--help): one Node start instead of a hundred. Only for calls that
// change nothing (the CLI's state between calls is whatever the previous call left).
const [entry, listsJson] = process.argv.slice(2);
const cli = await import(entry);
const results = [];
const write = { stdout: process.stdout.write.bind(process.stdout), stderr: process.stderr.write.bind(process.stderr) };
for (const args of JSON.parse(listsJson)) {
  const captured = { stdout: '', stderr: '' };
  process.stdout.write = (chunk) => ((captured.stdout += chunk), true);
  process.stderr.write = (chunk) => ((captured.stderr += chunk), true);
  let code;
  try {
    code = await cli.main(args);
  } catch (error) {
    captured.stderr += error instanceof Error ? error.stack : String(error);
    code = -1;
  } finally {
    process.stdout.write = write.stdout;
    process.stderr.write = write.stderr;
  }
  results.push({ args, code, ...captured });
}
process.stdout.write(JSON.stringify(results));
