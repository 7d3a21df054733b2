/**
 * Top frames of a V8 CPU profile (from `npm run bench -- --profile`):
 * `node dist/bench/profile-top.js bench/profiles/<file>.cpuprofile [count] [--from S] [--to S] [--folded out.txt] [--trim out.cpuprofile]`.
 * Self time per function (file:line) and inclusive time per package / source folder.
 * `--from`/`--to` keep the samples between those seconds after the profile's start (e.g. the
 * measured window, without start-up and warm-up). `--folded` writes the kept samples as collapsed
 * stacks (`root;caller;callee <microseconds>`, one line per stack: the input of flamegraph.pl,
 * inferno and speedscope); `--trim` writes the kept samples as a smaller `.cpuprofile` (Chrome
 * DevTools' and speedscope's flame chart).
 */
import { readFileSync, writeFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** A frame as `function file:line` (the last two path segments), or the bare name for native frames. */
function frameLabel(cf: Node['callFrame']): string {
  return `${cf.functionName || '(anonymous)'}${cf.url ? ` ${cf.url.split('/').slice(-2).join('/')}:${cf.lineNumber + 1}` : ''}`;
}

/** '(idle)' is the event loop waiting: not time the thread spent. */
const isIdle = (n: Node): boolean => n.callFrame.functionName === '(idle)';

/** Microseconds of self time per node id (each sample weighs its delta since the one before). */
function selfTimes(p: Profile): Map<number, number> {
  const self = new Map<number, number>();
  p.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0)));
  return self;
}

/**
 * The samples taken between `fromS` and `toS` seconds after the profile's start. The window is
 * contiguous, so each kept sample keeps its own delta and the trimmed profile's times still add up.
 */
export function windowed(p: Profile, fromS: number, toS: number): Profile {
  let t = p.startTime;
  let first = -1;
  let last = -1;
  let startTime = p.startTime;
  let endTime = p.startTime;
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0;
    const at = (t - p.startTime) / 1e6;
    if (at < fromS) continue;
    if (at > toS) break;
    if (first < 0) {
      first = i;
      startTime = t - (p.timeDeltas[i] ?? 0);
    }
    last = i;
    endTime = t;
  }
  if (first < 0) return { ...p, startTime, endTime, samples: [], timeDeltas: [] };
  return { ...p, startTime, endTime, samples: p.samples.slice(first, last + 1), timeDeltas: p.timeDeltas.slice(first, last + 1) };
}

/** Collapsed stacks: `root;...;leaf <self microseconds>` per distinct stack, heaviest first. */
export function folded(p: Profile): string {
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const lines = new Map<string, number>();
  for (const [id, us] of selfTimes(p)) {
    const stack: string[] = [];
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const n = byId.get(cur)!;
      if (n.callFrame.functionName !== '(root)') stack.push(frameLabel(n.callFrame).replace(/;/g, ','));
    }
    const key = stack.reverse().join(';') || '(root)';
    lines.set(key, (lines.get(key) ?? 0) + us);
  }
  return [...lines].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join('\n') + '\n';
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
  const argv = process.argv.slice(2);
  const take = (name: string, withValue: boolean): string | undefined => {
    const i = argv.indexOf(name);
    if (i < 0) return undefined;
    return argv.splice(i, withValue ? 2 : 1)[withValue ? 1 : 0];
  };
  const from = Number(take('--from', true) ?? 0);
  const to = Number(take('--to', true) ?? Infinity);
  const foldedOut = take('--folded', true);
  const trimOut = take('--trim', true);
  const timeline = take('--timeline', false) !== undefined;
  const [file, countArg] = argv;
  const count = Number(countArg ?? 30);
  const p = windowed(JSON.parse(readFileSync(file, 'utf8')) as Profile, from, to);
  if (foldedOut) writeFileSync(foldedOut, folded(p));
  if (trimOut) writeFileSync(trimOut, JSON.stringify(p));
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  if (timeline) {
    // Share of each second not idle, to choose a window (--from/--to).
    const busy: number[] = [];
    let t = 0;
    p.samples.forEach((id, i) => {
      t += p.timeDeltas[i] ?? 0;
      const s = Math.floor(t / 1e6);
      if (!isIdle(byId.get(id)!)) busy[s] = (busy[s] ?? 0) + (p.timeDeltas[i] ?? 0);
    });
    console.log(`timeline (s: busy %): ${Array.from(busy, (b, s) => `${s}:${Math.round((b ?? 0) / 1e4)}`).join(' ')}`);
  }
  const busySelf = [...selfTimes(p)].filter(([id]) => !isIdle(byId.get(id)!));
  const total = busySelf.reduce((sum, [, us]) => sum + us, 0);
  const fnSelf = new Map<string, number>();
  const pkgSelf = new Map<string, number>();
  for (const [id, t] of busySelf) {
    const cf = byId.get(id)!.callFrame;
    const name = frameLabel(cf);
    fnSelf.set(name, (fnSelf.get(name) ?? 0) + t);
    const pkg = cf.url ? where(cf.url) : cf.functionName.startsWith('(') ? cf.functionName : '(native)';
    pkgSelf.set(pkg, (pkgSelf.get(pkg) ?? 0) + t);
  }
  const pct = (t: number) => `${((100 * t) / total).toFixed(1).padStart(5)}%`;
  console.log(`busy (not idle) in the window: ${(total / 1e6).toFixed(2)} s of ${((p.endTime - p.startTime) / 1e6).toFixed(2)} s sampled`);
  console.log('\nself time by function:');
  for (const [k, v] of [...fnSelf].sort((a, b) => b[1] - a[1]).slice(0, count)) console.log(`${pct(v)}  ${k}`);
  console.log('\nself time by package / folder:');
  for (const [k, v] of [...pkgSelf].sort((a, b) => b[1] - a[1]).slice(0, count)) console.log(`${pct(v)}  ${k}`);
}

if (require.main === module) main();
