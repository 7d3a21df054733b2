/**
 * Top frames of a V8 CPU profile (from `npm run bench -- --profile`):
 * `node dist/bench/profile-top.js bench/profiles/<file>.cpuprofile [count]`.
 * Self time per function (file:line) and inclusive time per package / source folder.
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

function where(url: string): string {
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  const dist = url.indexOf('/dist/');
  if (dist >= 0) return url.slice(dist + 6).split('/').slice(0, 3).join('/');
  return url.startsWith('node:') ? url : url === '' ? '(native)' : url.split('/').slice(-2).join('/');
}

function main(): void {
  const [file, countArg] = process.argv.slice(2);
  const count = Number(countArg ?? 30);
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fnSelf = new Map<string, number>();
  const pkgSelf = new Map<string, number>();
  for (const [id, t] of self) {
    const n = byId.get(id)!;
    const cf = n.callFrame;
    const name = `${cf.functionName || '(anonymous)'} ${cf.url ? `${cf.url.split('/').slice(-2).join('/')}:${cf.lineNumber + 1}` : ''}`;
    fnSelf.set(name, (fnSelf.get(name) ?? 0) + t);
    const pkg = cf.url ? where(cf.url) : cf.functionName.startsWith('(') ? cf.functionName : '(native)';
    pkgSelf.set(pkg, (pkgSelf.get(pkg) ?? 0) + t);
  }
  const pct = (t: number) => `${((100 * t) / total).toFixed(1).padStart(5)}%`;
  console.log(`total sampled: ${(total / 1e6).toFixed(1)} s`);
  console.log('\nself time by function:');
  for (const [k, v] of [...fnSelf].sort((a, b) => b[1] - a[1]).slice(0, count)) console.log(`${pct(v)}  ${k}`);
  console.log('\nself time by package / folder:');
  for (const [k, v] of [...pkgSelf].sort((a, b) => b[1] - a[1]).slice(0, count)) console.log(`${pct(v)}  ${k}`);
}

main();
