import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const CLI = join(ROOT, 'dist', 'clients', 'cli', 'agent-cli.js');

/** Compiles the CLI (clients/) into dist, as `npm run cli` does. */
export function buildCli(): void {
  execFileSync(join(ROOT, 'node_modules', '.bin', 'swc'), ['clients', '-d', 'dist', '--quiet'], { cwd: ROOT, stdio: 'pipe' });
}

/** The real CLI as a child process with no AGENT_API_URL: nothing to reach (offline verification). */
export function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: ROOT, env: { PATH: process.env.PATH, NO_COLOR: '1' }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`CLI timed out\n${stdout}\n${stderr}`));
    }, 30_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end('');
  });
}
