import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ChildResult, ROOT, runNode } from './child-process';

const CLI = join(ROOT, 'dist', 'clients', 'cli', 'agent-cli.js');

/** Compiles the CLI (clients/) into dist, as `npm run cli` does. */
export function buildCli(): void {
  execFileSync(join(ROOT, 'node_modules', '.bin', 'swc'), ['clients', '-d', 'dist', '--quiet'], { cwd: ROOT, stdio: 'pipe' });
}

/** The real CLI as a child process with no AGENT_API_URL: nothing to reach (offline verification). */
export function runCli(args: string[]): Promise<ChildResult> {
  return runNode([CLI, ...args], { env: { PATH: process.env.PATH, NO_COLOR: '1' } });
}
