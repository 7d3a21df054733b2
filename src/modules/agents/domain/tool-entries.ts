import { FieldError } from '../../../common/errors/domain-error';
import { SECRET_NAME_RE } from '../../../common/text/secret-name';
import { FunctionToolEntry, HttpToolEntry, McpToolEntry, ToolEntry } from './agent-definition';

const NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;
const SERVER_RE = /^[A-Za-z0-9_-]{1,32}$/;
/** Anything of the shape `${...}` in a header value: each must be a well-formed secret reference. */
const REF_RE = /\$\{([^}]*)\}?/g;
const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const RISKS = ['auto', 'suggest', 'approve'];
const VISIBILITIES = ['public', 'private'];
const MAX_TOOLS = 128;

export interface EntryChecks {
  /** Whether an outbound URL is inside OUTBOUND_URL_ALLOWLIST. */
  urlAllowed(url: string): boolean;
  /** Whether a built-in tool of that name exists. */
  builtin(name: string): boolean;
  /** Whether a JSON Schema compiles (the validator's opinion). */
  schemaProblem(schema: unknown): string | null;
}

const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A secret named by a header value: `${secret:NAME}` (the tenant's) or `${env:NAME}` (TOOL_ENV_SECRETS). */
export interface SecretRef {
  kind: 'secret' | 'env';
  name: string;
  /** The text to replace: `${kind:NAME}`. */
  token: string;
}

/** The secret references of a header value, or the problem with one that is not well-formed. */
export function secretRefs(value: string): { refs: SecretRef[] } | { problem: string } {
  const refs: SecretRef[] = [];
  for (const m of value.matchAll(REF_RE)) {
    const ref = /^(secret|env):(.*)$/.exec(m[1]);
    const closed = m[0].endsWith('}');
    if (!closed || !ref) return { problem: 'a ${...} in a header value must be ${secret:NAME} or ${env:NAME}' };
    const [, kind, name] = ref;
    if (kind === 'secret' && !SECRET_NAME_RE.test(name)) return { problem: 'a ${secret:NAME} name must match [A-Z][A-Z0-9_]{0,63}' };
    if (kind === 'env' && !ENV_NAME_RE.test(name)) return { problem: 'an ${env:NAME} name must match [A-Za-z_][A-Za-z0-9_]{0,127}' };
    refs.push({ kind: kind as SecretRef['kind'], name, token: m[0] });
  }
  return { refs };
}

/** Parses and checks the `tools` of an agent definition; every problem is a field error. */
export function parseToolEntries(raw: unknown, checks: EntryChecks, field = 'tools'): { entries: ToolEntry[]; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const entries: ToolEntry[] = [];
  if (!Array.isArray(raw)) return { entries, errors: [{ field, message: 'must be an array' }] };
  if (raw.length > MAX_TOOLS) errors.push({ field, message: `at most ${MAX_TOOLS} entries` });
  raw.forEach((t, i) => {
    const f = `${field}[${i}]`;
    const err = (sub: string, message: string) => errors.push({ field: sub ? `${f}.${sub}` : f, message });
    if (typeof t === 'string') {
      if (!checks.builtin(t)) err('', `unknown built-in tool "${t}"`);
      else entries.push(t);
      return;
    }
    if (!isObj(t)) return err('', 'must be a built-in tool name or an object with a type');
    const before = errors.length;
    const known = new Set(['type', 'risk', 'visibility', 'idempotent']);
    const policy = () => {
      if (t.risk !== undefined && !RISKS.includes(t.risk as string)) err('risk', `must be one of ${RISKS.join(', ')}`);
      if (t.visibility !== undefined && !VISIBILITIES.includes(t.visibility as string)) err('visibility', `must be one of ${VISIBILITIES.join(', ')}`);
      if (t.idempotent !== undefined && typeof t.idempotent !== 'boolean') err('idempotent', 'must be a boolean');
    };
    const url = () => {
      known.add('url');
      if (typeof t.url !== 'string') return err('url', 'must be a URL');
      let u: URL;
      try {
        u = new URL(t.url);
      } catch {
        return err('url', 'must be a URL');
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') return err('url', 'must be an http(s) URL');
      if (!checks.urlAllowed(t.url)) err('url', 'is not inside OUTBOUND_URL_ALLOWLIST');
    };
    const headers = () => {
      known.add('headers');
      if (t.headers === undefined) return;
      if (!isObj(t.headers)) return err('headers', 'must be an object of strings');
      for (const [k, v] of Object.entries(t.headers)) {
        if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/.test(k)) err(`headers.${k}`, 'is not a valid header name');
        if (typeof v !== 'string' || v.length > 4096 || /[\r\n\0]/.test(v)) err(`headers.${k}`, 'must be a string without line breaks');
        else {
          const refs = secretRefs(v);
          if ('problem' in refs) err(`headers.${k}`, refs.problem);
        }
      }
    };
    const timeout = () => {
      known.add('timeout_ms');
      if (t.timeout_ms !== undefined && (!Number.isInteger(t.timeout_ms) || (t.timeout_ms as number) < 1 || (t.timeout_ms as number) > 3_600_000)) {
        err('timeout_ms', 'must be an integer 1..3600000');
      }
    };
    const named = () => {
      known.add('name').add('description').add('parameters');
      if (typeof t.name !== 'string' || !NAME_RE.test(t.name)) err('name', 'must match [A-Za-z0-9_-]{1,64}');
      else if (checks.builtin(t.name)) err('name', `"${t.name}" is a built-in tool name`);
      if (t.description !== undefined && (typeof t.description !== 'string' || t.description.length > 2000)) err('description', 'must be a string of at most 2000 characters');
      if (!isObj(t.parameters)) err('parameters', 'must be a JSON Schema object');
      else {
        const p = checks.schemaProblem(t.parameters);
        if (p) err('parameters', p);
      }
    };
    switch (t.type) {
      case 'http':
        named();
        url();
        headers();
        timeout();
        policy();
        known.add('callback_timeout_ms');
        if (t.callback_timeout_ms !== undefined && (!Number.isInteger(t.callback_timeout_ms) || (t.callback_timeout_ms as number) < 1000 || (t.callback_timeout_ms as number) > 7 * 24 * 3_600_000)) {
          err('callback_timeout_ms', 'must be an integer 1000..604800000');
        }
        break;
      case 'mcp':
        known.add('server').add('tools');
        if (typeof t.server !== 'string' || !SERVER_RE.test(t.server)) err('server', 'must match [A-Za-z0-9_-]{1,32}');
        url();
        headers();
        timeout();
        policy();
        if (t.tools !== undefined && t.tools !== '*' && !(Array.isArray(t.tools) && t.tools.every((x) => typeof x === 'string'))) err('tools', 'must be "*" or an array of tool names');
        break;
      case 'function':
        named();
        known.delete('idempotent');
        if (t.risk !== undefined && !RISKS.includes(t.risk as string)) err('risk', `must be one of ${RISKS.join(', ')}`);
        if (t.visibility !== undefined && !VISIBILITIES.includes(t.visibility as string)) err('visibility', `must be one of ${VISIBILITIES.join(', ')}`);
        break;
      default:
        return err('type', 'must be one of http, mcp, function');
    }
    for (const k of Object.keys(t)) if (!known.has(k)) err(k, 'is not an allowed property');
    if (errors.length === before) entries.push(structuredClone(t) as unknown as HttpToolEntry | McpToolEntry | FunctionToolEntry);
  });
  const names = new Set<string>();
  for (const e of entries) {
    const n = typeof e === 'string' ? e : e.type === 'mcp' ? `mcp:${e.server}` : e.name;
    if (names.has(n)) errors.push({ field, message: `"${n}" is listed twice` });
    names.add(n);
  }
  return { entries, errors };
}
