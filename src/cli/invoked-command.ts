/**
 * The name of the command `argv` runs, after the root options (`[--repo-dir D] <command> …`);
 * undefined for a leading flag (help, version) or no command. Shared by main() and the resident
 * server (which must not load the command table to decide).
 */
export function invokedCommandName(argv: readonly string[]): string | undefined {
  let index = 0;
  while (index < argv.length) {
    const argument = argv[index]!;
    if (argument === '--repo-dir') index += 2;
    else if (argument.startsWith('--repo-dir=')) index += 1;
    else if (argument.startsWith('-')) return undefined;
    else return argument;
  }
  return undefined;
}
