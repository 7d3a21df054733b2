import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';

/** A link of a Markdown file whose target does not resolve, with why. */
export interface BrokenLink {
  file: string;
  line: number;
  target: string;
  reason: string;
}

/** The lines of a Markdown file outside fenced code blocks (``` or ~~~), with their 1-based numbers. */
export function proseLines(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let fence: string | null = null;
  text.split('\n').forEach((raw, i) => {
    const m = /^ {0,3}(`{3,}|~{3,})/.exec(raw);
    if (m) {
      if (fence === null) fence = m[1][0].repeat(m[1].length);
      else if (m[1][0] === fence[0] && m[1].length >= fence.length && raw.trim() === m[1]) fence = null;
      return;
    }
    if (fence === null) out.push({ line: i + 1, text: raw });
  });
  return out;
}

/**
 * GitHub's anchor of a heading: the rendered text (inline code, links and emphasis reduced to
 * their text), lower-cased, every character that is not a letter, a digit, a space, `-` or `_`
 * dropped, spaces turned into `-`; a repeated anchor gets `-1`, `-2`, ... in order.
 */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text: line } of proseLines(text)) {
    const html = line.matchAll(/<a\s+(?:[^>]*\s)?(?:id|name)="([^"]+)"/g);
    for (const m of html) anchors.add(m[1]);
    const h = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const rendered = h[1]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/`([^`]*)`/g, '$1')
      .replace(/<[^>]+>/g, '')
      .replace(/(\*\*|__|\*|~~)/g, '');
    const base = rendered
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Every inline link and image target of a Markdown file's prose (not code spans or fenced code), with its line. */
export function linkTargets(text: string): { line: number; target: string }[] {
  // Fenced lines become empty lines (the numbering stays), code spans are dropped; a link's text may wrap.
  const lines = text.split('\n').map(() => '');
  for (const { line, text: raw } of proseLines(text)) lines[line - 1] = raw.replace(/`[^`\n]*`/g, '');
  const prose = lines.join('\n');
  const out: { line: number; target: string }[] = [];
  for (const m of prose.matchAll(/!?\[(?:[^\][]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    out.push({ line: prose.slice(0, m.index).split('\n').length, target: m[1] });
  }
  return out;
}

/**
 * The relative links of `files` (paths under `root`) that do not resolve: a file or folder that
 * does not exist, one outside `root`, or an anchor that no heading of the target Markdown file
 * has. Links with a scheme (https:, mailto:, ...) are not followed.
 */
export function brokenLinks(root: string, files: string[]): BrokenLink[] {
  const broken: BrokenLink[] = [];
  const anchorsOf = new Map<string, Set<string>>();
  const anchors = (abs: string) => {
    let a = anchorsOf.get(abs);
    if (!a) anchorsOf.set(abs, (a = headingAnchors(readFileSync(abs, 'utf8'))));
    return a;
  };
  for (const file of files) {
    const abs = resolve(root, file);
    for (const { line, target } of linkTargets(readFileSync(abs, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
      const hash = target.indexOf('#');
      const pathPart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
      const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
      if (isAbsolute(pathPart)) {
        broken.push({ file, line, target, reason: 'an absolute path' });
        continue;
      }
      const dest = pathPart === '' ? abs : resolve(dirname(abs), pathPart);
      const rel = relative(root, dest);
      if (rel.startsWith('..') || rel.split(sep)[0] === '..') {
        broken.push({ file, line, target, reason: 'outside the repository' });
        continue;
      }
      if (!existsSync(dest)) {
        broken.push({ file, line, target, reason: `${rel} does not exist` });
        continue;
      }
      if (anchor === null || anchor === '') continue;
      if (statSync(dest).isDirectory() || !dest.endsWith('.md')) {
        broken.push({ file, line, target, reason: `an anchor into ${rel}, which is not a Markdown file` });
        continue;
      }
      if (!anchors(dest).has(anchor)) broken.push({ file, line, target, reason: `no heading of ${rel} has the anchor #${anchor}` });
    }
  }
  return broken;
}
