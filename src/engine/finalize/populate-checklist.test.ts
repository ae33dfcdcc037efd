import { describe, expect, it } from 'vitest';
import { integrationChecklist, mergeChecklist } from './populate-checklist.js';

describe('M5 integration checklist', () => {
  it('detects handlers, components, commands, background work and wiring obligations', () => {
    const groups = integrationChecklist(
      [
        { path: 'pkg/api/users_handler.go', text: 'package api\nfunc (s *Server) handleUsers(w http.ResponseWriter) {}\nfunc (s *Server) handleUser(w http.ResponseWriter) {}\n' },
        { path: 'web/src/components/Dashboard.tsx', text: 'export default function Dashboard() { return null; }\n' },
        { path: 'web/src/components/ui/Button.tsx', text: 'export default function Button() {}\n' },
        { path: 'cmd/saw/status_cmd.go', text: 'var c = &cobra.Command{\n  Use: "show-status [flags]",\n}\n' },
        { path: 'src/cli/commands/hello.ts', text: 'export async function run() {}\n' },
        { path: 'src/poller.ts', text: 'setInterval(() => poll(), 1000);\n' },
        { path: 'src/plain.ts', text: 'export const x = 1;\n' },
      ],
      [{ symbol: 'registerHello', defined_in: 'src/hello.ts', must_be_called_from: 'src/cli/command-table.ts', agent: 'A', wave: 1, integration_pattern: 'register', description: undefined }],
    );
    expect(groups.map((group) => [group.title, group.items.map((item) => item.description)])).toEqual([
      ['API Route Registration', ['Register routes in server.go for handleUsers, handleUser']],
      ['React Navigation Wiring', ['Add Dashboard to App.tsx navigation']],
      ['CLI Command Registration', ['Register show-status in cmd/saw/main.go', "Register the hello command in the CLI's command table"]],
      ['Background Service Initialization', ['Verify if poller.ts needs initialization in Server constructor']],
      ['Wiring Obligations (E35)', ['Call registerHello (defined in src/hello.ts) from src/cli/command-table.ts (register)']],
    ]);
    expect(groups[0]?.items[0]?.command).toBe("grep 'handleUsers' pkg/api/server.go");
    expect(groups[2]?.items[0]?.command).toBe("grep 'newShowStatusCmd' cmd/saw/main.go");
  });

  it('merges idempotently by group title and item description', () => {
    const existing = [{ title: 'CLI Command Registration', items: [{ description: 'Register x' }] }];
    const detected = [
      { title: 'CLI Command Registration', items: [{ description: 'Register x' }, { description: 'Register y' }] },
      { title: 'New group', items: [{ description: 'z' }] },
    ];
    const first = mergeChecklist(existing, detected);
    expect(first).toMatchObject({ groupsAdded: 1, itemsAdded: 2 });
    expect(first.groups[0]?.items.map((item) => item.description)).toEqual(['Register x', 'Register y']);
    expect(mergeChecklist(first.groups, detected)).toMatchObject({ groupsAdded: 0, itemsAdded: 0 });
  });
});
