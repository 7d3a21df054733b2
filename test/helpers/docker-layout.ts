import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { dirname, join, posix, relative, resolve } from 'node:path';

/**
 * The file set of the Docker image, built without a Docker engine: the Dockerfile's stages are
 * replayed into folders (`<out>/<stage>/` stands for the stage's `/`). COPY is reproduced
 * exactly (the build context filtered by .dockerignore, or `--from` another stage), WORKDIR and
 * ENV are followed, and the RUN commands are those this helper knows (below); any other RUN
 * fails, so a new Dockerfile step has to be taught here instead of being silently skipped.
 *
 * Known RUN commands: `npm ci` (the stage gets a link to this checkout's node_modules, installed
 * from the same package-lock.json), `npm run <script>` (run for real), `npm prune ...` (skipped:
 * the linked install is the dev superset of the pruned one, and pruning it would prune this
 * checkout), `mkdir -p` (made), `chown` (no-op).
 */
export interface ImageLayout {
  /** Folder standing for the final stage's `/`. */
  root: string;
  /** The final stage's WORKDIR, on disk. */
  workdir: string;
  /** The final stage's ENV, with absolute paths mapped into `root`. */
  env: Record<string, string>;
  /** CMD (exec form). */
  cmd: string[];
  /** Base image of the final stage (e.g. `node:22-slim`). */
  baseImage: string;
  /** RUN commands that were not reproduced, with why. */
  skipped: string[];
}

interface Instruction {
  op: string;
  args: string;
}

/** Dockerfile -> instructions (comments dropped, `\` continuations joined). */
export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let buf = '';
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (buf === '' && /^\s*(#|$)/.test(line)) continue;
    if (/\\\s*$/.test(line)) {
      buf += line.replace(/\\\s*$/, ' ');
      continue;
    }
    buf += line;
    const m = /^\s*([A-Za-z]+)\s+([\s\S]*)$/.exec(buf);
    if (!m) throw new Error(`unparsable Dockerfile line: ${buf}`);
    out.push({ op: m[1].toUpperCase(), args: m[2].trim() });
    buf = '';
  }
  return out;
}

/** .dockerignore patterns -> a predicate on context-relative paths (posix). Last match wins, `!` re-includes. */
export function dockerignoreMatcher(text: string): (rel: string) => boolean {
  const rules = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const negate = l.startsWith('!');
      const pattern = posix.normalize((negate ? l.slice(1) : l).replace(/^\/+/, '')).replace(/\/+$/, '');
      const re = pattern
        .split('/')
        .map((seg) => (seg === '**' ? '.*' : seg.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]')))
        .join('/');
      return { negate, re: new RegExp(`^${re}$`) };
    });
  return (rel) => {
    // A path is ignored when it or one of its parent folders matches.
    const parts = rel.split('/');
    let ignored = false;
    for (const r of rules) {
      for (let i = 1; i <= parts.length; i++) {
        if (r.re.test(parts.slice(0, i).join('/'))) {
          ignored = !r.negate;
          break;
        }
      }
    }
    return ignored;
  };
}

function splitArgs(args: string): string[] {
  if (args.startsWith('[')) return JSON.parse(args) as string[];
  return args.split(/\s+/).filter(Boolean);
}

function copyFiltered(src: string, dest: string, contextRoot: string, ignored: (rel: string) => boolean): void {
  const rel = relative(contextRoot, src).split('\\').join('/');
  if (ignored(rel)) return;
  const st = statSync(src);
  if (st.isDirectory()) {
    mkdirSync(dest, { recursive: true });
    for (const name of readdirSync(src)) copyFiltered(join(src, name), join(dest, name), contextRoot, ignored);
  } else {
    mkdirSync(dirname(dest), { recursive: true });
    cpSync(src, dest);
  }
}

/** Replays `Dockerfile` of `context` into `out` and returns the final stage's layout. */
export function buildImageLayout(context: string, out: string): ImageLayout {
  const instructions = parseDockerfile(readFileSync(join(context, 'Dockerfile'), 'utf8'));
  const ignoreFile = join(context, '.dockerignore');
  const ignored = dockerignoreMatcher(existsSync(ignoreFile) ? readFileSync(ignoreFile, 'utf8') : '');
  const stages = new Map<string, string>();
  let root = '';
  let workdir = '/';
  let env: Record<string, string> = {};
  let cmd: string[] = [];
  let baseImage = '';
  const skipped: string[] = [];
  const inStage = (p: string, base = root) => join(base, posix.isAbsolute(p) ? p : posix.join(workdir, p));

  for (const { op, args } of instructions) {
    switch (op) {
      case 'FROM': {
        const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
        if (!m) throw new Error(`FROM ${args}: not understood`);
        baseImage = m[1];
        if (stages.has(baseImage)) throw new Error(`FROM another stage (${baseImage}) is not supported here`);
        const name = m[2] ?? `stage${stages.size}`;
        root = join(out, name);
        mkdirSync(root, { recursive: true });
        stages.set(name, root);
        workdir = '/';
        env = {};
        cmd = [];
        break;
      }
      case 'WORKDIR':
        workdir = posix.resolve(workdir, args);
        mkdirSync(join(root, workdir), { recursive: true });
        break;
      case 'ENV': {
        // ENV a=b c=d (optionally quoted values); the legacy `ENV a b` form too.
        const pairs = [...args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("([^"]*)"|\S*)/g)];
        if (pairs.length === 0) {
          const [k, ...v] = args.split(/\s+/);
          env[k] = v.join(' ');
        }
        for (const p of pairs) env[p[1]] = p[3] ?? p[2];
        break;
      }
      case 'COPY': {
        const parts = splitArgs(args);
        let from: string | null = null;
        const paths: string[] = [];
        for (const p of parts) {
          const f = /^--from=(.+)$/.exec(p);
          if (f) from = f[1];
          else if (p.startsWith('--')) continue; // --chown / --chmod: ownership is not part of the file set
          else paths.push(p);
        }
        const dest = paths.pop()!;
        const destIsDir = dest.endsWith('/') || paths.length > 1;
        for (const src of paths) {
          let abs: string;
          if (from !== null) {
            const base = stages.get(from);
            if (!base) throw new Error(`COPY --from=${from}: no such stage`);
            abs = join(base, posix.resolve('/', src));
          } else {
            abs = resolve(context, src);
            if (ignored(relative(context, abs).split('\\').join('/'))) throw new Error(`COPY ${src}: excluded by .dockerignore`);
          }
          if (!existsSync(abs)) throw new Error(`COPY ${src}: not found${from ? ` in stage ${from}` : ' in the build context'}`);
          const isDir = statSync(abs).isDirectory();
          const target = inStage(dest);
          const finalTarget = isDir || !destIsDir ? target : join(target, posix.basename(src));
          if (from !== null) cpSync(abs, finalTarget, { recursive: true, verbatimSymlinks: true });
          else copyFiltered(abs, finalTarget, context, ignored);
        }
        break;
      }
      case 'RUN':
        for (const command of args.split('&&').map((c) => c.trim())) {
          const cwd = join(root, workdir);
          if (/^npm ci\b/.test(command)) {
            const ours = readFileSync(join(context, 'package-lock.json'), 'utf8');
            if (readFileSync(join(cwd, 'package-lock.json'), 'utf8') !== ours) throw new Error('npm ci: the stage has another package-lock.json');
            symlinkSync(join(context, 'node_modules'), join(cwd, 'node_modules'), 'dir');
          } else if (/^npm run [\w:-]+$/.test(command)) {
            execFileSync('npm', ['run', command.split(/\s+/)[2]], { cwd, stdio: 'pipe', env: process.env });
          } else if (/^npm prune\b/.test(command)) {
            skipped.push(`${command}: the linked node_modules is the dev install (a superset of the pruned one)`);
          } else if (/^mkdir -p /.test(command)) {
            for (const d of command.split(/\s+/).slice(2)) mkdirSync(inStage(d), { recursive: true });
          } else if (/^chown /.test(command)) {
            skipped.push(`${command}: ownership is not part of the file set`);
          } else {
            throw new Error(`RUN ${command}: not known to test/helpers/docker-layout.ts (teach it how to reproduce this step)`);
          }
        }
        break;
      case 'CMD':
        cmd = splitArgs(args);
        break;
      case 'USER':
      case 'EXPOSE':
      case 'HEALTHCHECK':
      case 'LABEL':
      case 'ARG':
        break;
      default:
        throw new Error(`${op}: not known to test/helpers/docker-layout.ts`);
    }
  }
  const mapped = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v.startsWith('/') ? join(root, v) : v]));
  return { root, workdir: join(root, workdir), env: mapped, cmd, baseImage, skipped };
}
