import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

let cached: string | null = null;

/** The repository root (the folder with package.json), whether running from src/ or dist/. */
export function projectRoot(): string {
  if (cached) return cached;
  let dir = __dirname;
  while (!existsSync(join(dir, 'package.json')) || !existsSync(join(dir, 'agents'))) {
    const parent = dirname(dir);
    if (parent === dir) return (cached = process.cwd());
    dir = parent;
  }
  return (cached = dir);
}
