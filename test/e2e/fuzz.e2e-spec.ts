import { writeFileSync } from 'node:fs';
import fc from 'fast-check';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { createSession, isTerminal, startRun, userInput, waitForRun } from '../helpers/runs';

/**
 * Schema-driven fuzzing over EVERY operation of `/docs-json` (issue #14): valid-ish and hostile
 * bodies, path ids, query parameters and headers (U+0000, lone surrogates, deep nesting, huge
 * numbers, wrong types, unknown fields, malformed JSON, wrong content types), sent through a
 * normal HTTP client (fetch). Every response must be below 500; every non-2xx must carry the
 * error envelope and an `X-Request-Id` equal to its `request_id`; no body may carry a stack
 * trace or SQL; `/healthz` must still answer 200 afterwards.
 *
 * Deterministic: the requests of operation i come from `fc.sample(..., { seed: FUZZ_SEED + i })`.
 * The seed is printed; replay a failure with `FUZZ_SEED=<seed>` (and `FUZZ_REQUESTS=<n>`, default 2100).
 *
 * Path segments include what Fastify itself answers before any of our code runs (item 6):
 * segments that are not valid percent-encoded UTF-8 (`%ZZ`, `%ED%A0%80`: FST_ERR_BAD_URL) and
 * path parameters over 100 characters (414). Raw-socket cases (malformed request lines, header
 * floods) cannot be sent through fetch: test/e2e/hardening-http-errors.e2e-spec.ts has them.
 */

const SEED = Number(process.env.FUZZ_SEED ?? 1414);
const TOTAL = Number(process.env.FUZZ_REQUESTS ?? 2100);
const CONCURRENCY = 8;

type Schema = {
  $ref?: string;
  type?: string;
  enum?: unknown[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: boolean | Schema;
  minimum?: number;
  maximum?: number;
  maxLength?: number;
  nullable?: boolean;
  example?: unknown;
  default?: unknown;
  minLength?: number;
  maxItems?: number;
  description?: string;
  allOf?: Schema[];
  oneOf?: Schema[];
};
interface Operation {
  method: string;
  path: string;
  parameters: Array<{ name: string; in: string; schema?: Schema; required?: boolean }>;
  body: { type: 'json'; schema: Schema } | { type: 'multipart' } | null;
  /** The schema of the 200 JSON answer. */
  ok?: Schema;
}
interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | FormData | Uint8Array;
  note: string;
  /** The value is invalid by the schema: the answer must be a 4xx (a 2xx means it was ignored or accepted). */
  mustReject?: boolean;
  /** The error code the answer must carry. */
  code?: string;
}
interface Fixtures {
  sessions: string[];
  runs: string[];
  messages: string[];
  attachments: string[];
  approvals: string[];
  agents: string[];
  webhooks: string[];
}

// ---- hostile values ---------------------------------------------------------------------

/** Replaced in the JSON text after JSON.stringify: what JSON.stringify cannot write itself. */
const DEEP = (n: number) => `\u0001deep:${n}\u0001`;
const RAW = (text: string) => `\u0001raw:${text}\u0001`;
function finishJson(text: string): string {
  return text.replace(/"\\u0001(deep|raw):([^"\\]*)\\u0001"/g, (_m, kind: string, arg: string) =>
    kind === 'deep' ? '['.repeat(Number(arg)) + ']'.repeat(Number(arg)) : arg,
  );
}

const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c));
const hostileString = fc.oneof(
  fc.constantFrom(
    '\u0000',
    'a\u0000b',
    '\ud800',
    'x\udc00y',
    'bad \udbff',
    '\ud83d\ude00 pair',
    "' OR 1=1 --",
    '"; DROP TABLE sessions; --',
    '../../etc/passwd',
    '%00',
    '\r\n\r\n',
    ' ',
    '',
    '__proto__',
    'constructor',
    '\u202e\u200b',
    '<script>alert(1)</script>',
    '${env:PATH}',
    'x'.repeat(600),
    'y'.repeat(250_001),
    '!script [{"text":"bad \\ud800 char"}]',
    '!script [{"text":"nul \\u0000 char","tool_calls":[{"name":"get_time","arguments":{"k":"\\udc00"}}]}]',
    `!script [{"tool_calls":[{"name":"calculator","arguments":${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}}]}]`,
    '!script [{"text":"emoji \\ud83d\\ude00"},{"error":{"code":"model_error","message":"boom"}}]',
    '!script not json',
    'Where is my order O-1001?',
  ),
  fc.tuple(fc.string({ maxLength: 8 }), loneSurrogate, fc.string({ maxLength: 8 })).map(([a, s, b]) => a + s + b),
  fc.string({ unit: 'binary', maxLength: 40 }),
);
const hostileNumber = fc.constantFrom(-1, 0, 0.5, -0, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53, 2 ** 63, 1e308, -1e308, 1e21, RAW('1e400'), RAW('-1e400'), RAW('1' + '0'.repeat(400)), RAW('0.1e-400'));
const hostileScalar: fc.Arbitrary<unknown> = fc.oneof(hostileString, hostileNumber, fc.constantFrom(true, false, null));
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: hostileScalar },
  { weight: 1, arbitrary: fc.constantFrom([], {}, [[]], [null], [{}], { '': 1 }, { '\u0000': 'k' }, { '\ud800': 'k' }) },
  { weight: 1, arbitrary: fc.constantFrom(DEEP(64), DEEP(65), DEEP(2000), DEEP(5000)) },
  { weight: 1, arbitrary: fc.array(hostileScalar, { maxLength: 4 }) },
  { weight: 1, arbitrary: fc.dictionary(hostileString.filter((k) => k.length < 50), hostileScalar, { maxKeys: 3 }) },
);
const unknownFields = fc.dictionary(
  fc.constantFrom('id', 'tenant_id', 'status', 'revision', 'created_at', 'zz', '__proto__', 'constructor', 'x\u0000'),
  hostileValue,
  { maxKeys: 2 },
);

// ---- schema-driven values ---------------------------------------------------------------

function resolve(doc: any, s: Schema): Schema {
  let out = s;
  for (let i = 0; out.$ref && i < 10; i++) out = doc.components.schemas[out.$ref.split('/').pop()!];
  if (out.allOf?.length === 1) return resolve(doc, out.allOf[0]);
  return out;
}

/** A value of the schema, each part of it sometimes replaced by a hostile value. */
function valueOf(doc: any, schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(doc, schema);
  const valid = validOf(doc, s, depth);
  // An object where one is expected is also tried as the wrong container or a scalar.
  const wrongShape = s.properties || s.type === 'object' ? [{ weight: 1, arbitrary: fc.constantFrom<unknown>([], [{}], [[]], 'x', 5, null) }] : [];
  return fc.oneof({ weight: 6, arbitrary: valid }, { weight: 1, arbitrary: hostileValue }, ...wrongShape);
}

function validOf(doc: any, s: Schema, depth: number): fc.Arbitrary<unknown> {
  if (s.enum?.length) return fc.constantFrom(...s.enum);
  if (s.oneOf?.length) return fc.oneof(...s.oneOf.map((o) => valueOf(doc, o, depth + 1)));
  switch (s.type) {
    case 'integer':
    case 'number': {
      const min = s.minimum ?? 0;
      const max = s.maximum ?? Math.max(min + 1000, 1000);
      // The bounds, just outside them, and the integer sizes of the database and of JavaScript.
      return fc.oneof(fc.integer({ min, max }), fc.constantFrom(min, max, min - 1, max + 1, 2 ** 31 - 1, 2 ** 31, 2 ** 53, -(2 ** 31) - 1));
    }
    case 'boolean':
      return fc.boolean();
    case 'string':
      return fc.oneof(
        ...(s.example !== undefined ? [fc.constant(s.example)] : []),
        fc.string({ maxLength: Math.min(s.maxLength ?? 30, 30) }),
        fc.constantFrom('hello', 'scripted', 'What time is it?', 'weather in Paris', '!script [{"text":"hi","chunk_size":2}]'),
      );
    case 'array':
      if (depth > 4) return fc.constant([]);
      return fc.array(valueOf(doc, s.items ?? {}, depth + 1), { maxLength: 3 });
    case 'object':
    default: {
      if (depth > 4) return fc.constant({});
      if (s.properties) {
        const props: Record<string, fc.Arbitrary<unknown>> = {};
        for (const [k, p] of Object.entries(s.properties)) props[k] = valueOf(doc, p, depth + 1);
        return fc
          .tuple(fc.record(props, { requiredKeys: (s.required ?? []).filter((k) => k in props) }), fc.oneof({ weight: 4, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: unknownFields }))
          .map(([known, extra]) => Object.assign({}, known, extra));
      }
      if (s.additionalProperties && typeof s.additionalProperties === 'object') {
        return fc.dictionary(fc.string({ maxLength: 10 }), valueOf(doc, s.additionalProperties, depth + 1), { maxKeys: 4 });
      }
      if (s.type === 'object' || s.additionalProperties) return fc.dictionary(fc.string({ maxLength: 10 }), hostileScalar, { maxKeys: 3 });
      return fc.oneof(hostileScalar, fc.constant({ name: 'Ada', tier: 'gold' }));
    }
  }
}

// ---- requests ---------------------------------------------------------------------------

const RESOURCE_BY_COLLECTION: Record<string, keyof Fixtures> = {
  sessions: 'sessions',
  runs: 'runs',
  messages: 'messages',
  attachments: 'attachments',
  approvals: 'approvals',
  agents: 'agents',
  webhooks: 'webhooks',
};
const PREFIX: Record<keyof Fixtures, string> = { sessions: 'sess', runs: 'run', messages: 'msg', attachments: 'att', approvals: 'apr', agents: '', webhooks: 'wh' };
const crockford = fc.string({ unit: fc.constantFrom(...'0123456789ABCDEFGHJKMNPQRSTVWXYZ'), minLength: 26, maxLength: 26 });

/** A path segment: a real id of the right kind, a well-formed stranger, or something hostile (bad escapes and over-long ones included). */
function pathParam(fixtures: Fixtures, kind: keyof Fixtures | null): fc.Arbitrary<string> {
  const real = kind && fixtures[kind].length ? fixtures[kind] : ['x'];
  const wellFormed = kind && PREFIX[kind] ? crockford.map((u) => `${PREFIX[kind]}_${u}`) : fc.constantFrom('nope', 'assistant', 'support_agent');
  const hostile = fc
    .oneof(
      hostileString.filter((x) => !/[\ud800-\udfff]/.test(x.replace(/[\ud800-\udbff][\udc00-\udfff]/g, ''))).map((x) => encodeURIComponent(x)),
      fc.constantFrom('sess_%00abc', 'run_%00', '%2e%2e', '..%2f..%2fetc', '%F0%9F%98%80', '%C3%A9', '%20', '%2500', 'sess_01ARZ3NDEKTSV4RRFFQ69G5FAV%00'),
      fc.constantFrom(...real).map((id) => id.toLowerCase()),
      fc.constantFrom(...real).map((id) => `${id}%00`),
      fc.constantFrom('%ZZ', 'sess_%ZZ', '%ED%A0%80', '%E0%A4%A', '%', 'x'.repeat(101), `sess_${'0'.repeat(200)}`, 'a%2F'.repeat(40)),
    )
    .filter((x) => x.length > 0);
  return fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...real) }, { weight: 2, arbitrary: wellFormed }, { weight: 3, arbitrary: hostile });
}

function queryValue(doc: any, p: { name: string; schema?: Schema }, fixtures: Fixtures): fc.Arbitrary<string> {
  const s = resolve(doc, p.schema ?? {});
  const valid: fc.Arbitrary<string> =
    s.type === 'integer' || s.type === 'number'
      ? fc.integer({ min: s.minimum ?? 0, max: s.maximum ?? 100 }).map(String)
      : s.enum?.length
        ? fc.constantFrom(...s.enum.map(String))
        : fc.oneof(fc.constantFrom(...fixtures.sessions, ...fixtures.runs, ...fixtures.messages, '0', '3', '2025-01-01T00:00:00.000Z', 'admin_a', 'POST /v1/sessions'), fc.string({ maxLength: 12 }));
  const hostile = fc.oneof(
    fc.constantFrom('0x10', ' 5', '5 ', '1e1', '+5', '-1', '0', '5.0', '1e400', '99999999999999999999', '', 'NaN', 'desc ', 'ASC', "' OR 1=1", '%00', '%ED%A0%80', '%ZZ', 'a'.repeat(300), '2025-13-45', 'run_%00'),
    hostileString.filter((x) => !/[\ud800-\udfff]/.test(x) && x.length < 400).map((x) => encodeURIComponent(x)),
  );
  return fc.oneof({ weight: 3, arbitrary: valid.map((v) => encodeURIComponent(v)) }, { weight: 2, arbitrary: hostile });
}

const authHeader = fc.oneof(
  { weight: 12, arbitrary: fc.constant(`Bearer ${KEYS.adminA}`) },
  { weight: 4, arbitrary: fc.constant(`Bearer ${KEYS.memberA1}`) },
  { weight: 1, arbitrary: fc.constant(`Bearer ${KEYS.adminB}`) },
  { weight: 1, arbitrary: fc.constantFrom('', 'Bearer', 'Bearer nope-nope-nope', 'Basic Zm9vOmJhcg==', `bearer ${KEYS.adminA}`, `Bearer ${KEYS.adminA} x`) },
);
const idempotencyKey = fc.oneof(
  { weight: 6, arbitrary: fc.uuid() },
  { weight: 2, arbitrary: fc.constantFrom('fuzz-shared-1', 'fuzz-shared-2') },
  { weight: 2, arbitrary: fc.constantFrom('', ' ', 'k'.repeat(255), 'k'.repeat(256), 'caf\u00e9', 'a\tb', '"quoted"') },
);
const requestId = fc.oneof(
  { weight: 3, arbitrary: fc.stringMatching(/^[A-Za-z0-9._-]{1,40}$/) },
  { weight: 1, arbitrary: fc.constantFrom('', 'has space', 'x'.repeat(200), 'caf\u00e9', '../../') },
);
const jsonContentType = fc.oneof(
  { weight: 10, arbitrary: fc.constant('application/json') },
  { weight: 1, arbitrary: fc.constantFrom('application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', '') },
);
const malformedBody = fc.constantFrom('{', '', ' ', '[]', 'null', '"str"', '1e400', '{"a":1,"a":2}', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}', '\u0000', '{"title":"\\ud800"}', '\ufeff{}', '{"title":"x"}garbage');

function requestsOf(doc: any, op: Operation, fixtures: Fixtures): fc.Arbitrary<FuzzRequest> {
  const segments = op.path.split('/');
  const pathArbs = segments.map((seg, i) => {
    const m = /^\{(.+)\}$/.exec(seg);
    if (!m) return fc.constant(seg);
    return pathParam(fixtures, RESOURCE_BY_COLLECTION[segments[i - 1]] ?? null);
  });
  const query = op.parameters.filter((p) => p.in === 'query');
  const queryArb = fc
    .tuple(
      fc.subarray(query),
      fc.array(fc.tuple(fc.constantFrom('zz', 'limit', 'after', '__proto__'), fc.constantFrom('1', '0x10', '%00')), { maxLength: 1 }),
    )
    .chain(([chosen, extra]) =>
      fc.tuple(...chosen.map((p) => queryValue(doc, p, fixtures).map((v) => `${encodeURIComponent(p.name)}=${v}`)), fc.constant(extra.map(([k, v]) => `${k}=${v}`))),
    )
    .map((parts) => {
      const extra = parts.pop() as string[];
      const all = [...(parts as string[]), ...extra];
      return all.length ? `?${all.join('&')}` : '';
    });
  const isPost = op.method === 'POST';
  const bodyArb: fc.Arbitrary<{ body?: string | FormData; contentType?: string; note: string }> =
    op.body?.type === 'multipart'
      ? fc.oneof(
          { weight: 4, arbitrary: multipartBody() },
          { weight: 1, arbitrary: fc.tuple(valueOf(doc, { type: 'object' }), jsonContentType).map(([v, ct]) => ({ body: finishJson(JSON.stringify(v)), contentType: ct, note: 'json to multipart' })) },
        )
      : op.body?.type === 'json'
        ? fc.oneof(
            { weight: 8, arbitrary: fc.tuple(valueOf(doc, op.body.schema), jsonContentType).map(([v, ct]) => ({ body: finishJson(JSON.stringify(boundedWait(v)) ?? 'null'), contentType: ct, note: 'schema' })) },
            { weight: 1, arbitrary: malformedBody.map((b) => ({ body: b, contentType: 'application/json', note: 'malformed' })) },
            { weight: 1, arbitrary: fc.constant({ note: 'no body' }) },
          )
        : isPost
          ? fc.oneof(
              { weight: 3, arbitrary: fc.constant({ note: 'no body' }) },
              { weight: 1, arbitrary: fc.tuple(hostileValue, jsonContentType).map(([v, ct]) => ({ body: finishJson(JSON.stringify(v) ?? 'null'), contentType: ct, note: 'unexpected body' })) },
            )
          : fc.constant({ note: 'no body' });
  const accept = op.path.endsWith('/events') ? fc.constantFrom('text/event-stream', 'application/json', '*/*', 'text/event-stream') : fc.constantFrom('application/json', '*/*');
  const lastEventId = fc.option(fc.constantFrom('0', '3', '-1', '0x10', ' 2', '99999999999999999999', 'abc'), { nil: undefined });
  return fc
    .record({
      path: fc.tuple(...pathArbs).map((p) => p.join('/')),
      query: queryArb,
      body: bodyArb,
      auth: fc.option(authHeader, { nil: undefined, freq: 20 }),
      idem: fc.option(idempotencyKey, { nil: undefined, freq: isPost ? 8 : 2 }),
      reqId: fc.option(requestId, { nil: undefined, freq: 3 }),
      accept,
      lastEventId,
    })
    .map((r) => {
      const headers: Record<string, string> = { accept: r.accept };
      if (r.auth !== undefined) headers.authorization = r.auth;
      if (r.idem !== undefined) headers['idempotency-key'] = r.idem;
      if (r.reqId !== undefined) headers['x-request-id'] = r.reqId;
      if (r.lastEventId !== undefined && op.path.endsWith('/events')) headers['last-event-id'] = r.lastEventId;
      if (r.body.contentType) headers['content-type'] = r.body.contentType;
      return { method: op.method, path: r.path + r.query, headers, body: r.body.body, note: r.body.note };
    });
}

/** A sync run waits up to wait_timeout_ms (120 s at most) for its run: bounded, to keep the suite fast. */
function boundedWait(v: unknown): unknown {
  if (v && typeof v === 'object' && typeof (v as { wait_timeout_ms?: unknown }).wait_timeout_ms === 'number') {
    const body = v as { wait_timeout_ms: number };
    if (body.wait_timeout_ms > 2000 && body.wait_timeout_ms <= 120_000) body.wait_timeout_ms = 2000;
  }
  return v;
}

function multipartBody(): fc.Arbitrary<{ body: FormData; note: string }> {
  const content = fc.oneof(
    fc.constantFrom(
      Buffer.from('hello'),
      Buffer.alloc(0),
      Buffer.from([0xff, 0xfe, 0x68, 0x00, 0x69, 0x00]),
      Buffer.from('%PDF-1.7\n%%EOF\n'),
      Buffer.from('MZ\0\0\0\0'),
      Buffer.from('X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*'),
      Buffer.from('{"a":'),
      Buffer.from('\u0000\u0001\u0002'),
    ),
    fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
  );
  const filename = fc.oneof(fc.constantFrom('a.txt', 'a.json', 'a.png', '../../etc/passwd', 'a\u0000b.txt', 'x'.repeat(300) + '.txt', '', 'caf\u00e9.md', 'a\ud800.txt', 'a.exe'), fc.string({ maxLength: 12 }));
  return fc.tuple(content, filename, fc.option(fc.constantFrom('agent_input', 'other', '\u0000', ''), { nil: undefined }), fc.boolean()).map(([c, name, purpose, withFile]) => {
    const form = new FormData();
    if (purpose !== undefined) form.append('purpose', purpose);
    if (withFile) form.append('file', new Blob([c]), name);
    else form.append('other', 'field');
    return { body: form, note: 'multipart' };
  });
}

// ---- checks -----------------------------------------------------------------------------

const LEAK = /\bat [\w.<>$]+ \(|\bat .+:\d+:\d+|node_modules|QueryFailedError|\bSELECT\b.+\bFROM\b|\bINSERT INTO\b|\bUPDATE \w+ SET\b|syntax error at or near|violates .* constraint|Maximum call stack|TypeError|RangeError|ReferenceError/;

/** The problem with the response to `r` (null: none), or 'skipped' when the client would not send it. */
const statuses = new Map<number, number>();

async function send(t: TestApp, r: FuzzRequest): Promise<string | null> {
  const describe = () => `${r.method} ${r.path} [${r.note}] headers=${JSON.stringify(r.headers)} body=${typeof r.body === 'string' ? JSON.stringify(r.body.slice(0, 300)) : r.body instanceof Uint8Array ? `bytes ${Buffer.from(r.body).toString('hex').slice(0, 120)}` : r.body ? 'multipart' : 'none'}`;
  let res: Response;
  try {
    res = await fetch(t.url + r.path, { method: r.method, headers: r.headers, body: r.body, signal: AbortSignal.timeout(20_000) });
  } catch (err) {
    // The client refused to send it (a header value fetch will not encode): not the server's doing.
    if (err instanceof TypeError && !String((err as { cause?: unknown }).cause ?? '').match(/ECONNRESET|other side closed|socket/i)) return 'skipped';
    return `${describe()} -> request failed: ${(err as Error).message} ${(err as { cause?: Error }).cause?.message ?? ''}`;
  }
  statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    await res.body?.cancel().catch(() => undefined);
    if (r.mustReject || r.code) return `${describe()} -> ${res.status} (event stream) for an invalid value`;
    return res.status >= 500 ? `${describe()} -> ${res.status} (event stream)` : null;
  }
  const text = await res.text().catch((err: Error) => `<<body failed: ${err.message}>>`);
  const problems: string[] = [];
  if (res.status >= 500) problems.push(`status ${res.status}`);
  if (LEAK.test(text)) problems.push('stack trace or SQL in the body');
  if (res.status >= 300 && res.status !== 304) {
    let env: any;
    try {
      env = JSON.parse(text);
    } catch {
      env = undefined;
    }
    const e = env?.error;
    if (!e || typeof e.code !== 'string' || typeof e.message !== 'string' || typeof e.type !== 'string' || typeof e.retryable !== 'boolean' || !('details' in e)) {
      problems.push('no error envelope');
    }
    const rid = res.headers.get('x-request-id');
    if (!rid) problems.push('no X-Request-Id');
    else if (e && e.request_id !== rid) problems.push(`X-Request-Id ${rid} != request_id ${e.request_id}`);
    if (r.code && e?.code !== r.code) problems.push(`code ${e?.code} instead of ${r.code}`);
  }
  if (r.mustReject && (res.status < 400 || res.status >= 500)) problems.push(`an invalid value answered ${res.status} (ignored or accepted), not a 4xx`);
  if (r.code && res.status < 300) problems.push(`answered ${res.status} instead of ${r.code}`);
  return problems.length ? `${describe()} -> ${res.status} ${problems.join(', ')}: ${text.slice(0, 300)}` : null;
}

async function fixturesFor(t: TestApp): Promise<Fixtures> {
  const key = KEYS.adminA;
  const sessions = [await createSession(t, key, { agent_id: 'assistant' }), await createSession(t, key), await createSession(t, key), await createSession(t, KEYS.memberA1)];
  const done = await startRun(t, key, sessions[0], { input: userInput('What time is it?') });
  const run = await waitForRun(t, key, done.body.run_id, isTerminal);
  const waiting = await startRun(t, key, sessions[1], { input: userInput('Where is my order O-1001?') });
  await waitForRun(t, key, waiting.body.run_id, (r) => r.status === 'waiting_for_approval' || isTerminal(r));
  const approvals = (await t.call(key, 'GET', `/v1/runs/${waiting.body.run_id}/approvals`)).body.data.map((a: any) => a.id);
  const messages = (await t.call(key, 'GET', `/v1/sessions/${sessions[0]}/messages`)).body.data.map((m: any) => m.id);
  const form = new FormData();
  form.append('file', new Blob([Buffer.from('fuzz fixture')]), 'fixture.txt');
  const up = await fetch(`${t.url}/v1/attachments`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'idempotency-key': 'fuzz-fixture' }, body: form });
  const attachment = ((await up.json()) as any).id as string;
  // Two endpoints, so that a list which ignores `order` shows it.
  const hook = await t.call(key, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/fuzz-hook', events: ['run.completed'], description: 'fuzz fixture' });
  const hook2 = await t.call(key, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/fuzz-hook-2', events: ['run.failed'] });
  if (hook.status !== 201 || hook2.status !== 201) throw new Error(`webhook fixtures: ${hook.status} ${hook.text} ${hook2.status}`);
  return { sessions, runs: [run.id, waiting.body.run_id], messages, attachments: [attachment], approvals, agents: ['assistant', 'support_agent'], webhooks: [hook.body.id, hook2.body.id] };
}

// ---- systematic mutations (issue #31 item 7: bad input, whole classes) -----------------
//
// Besides the random requests: for every operation, each body field (nested objects and the
// first item of arrays of objects included) is replaced, one at a time in an otherwise valid
// body, by null, by each wrong JSON type and by a value just out of its range (minimum, maximum,
// maxLength, enum); each query parameter gets `%00`, `0x10`, `-1` and (enums) an unknown value.
// A value the schema forbids must be answered 4xx: a 2xx means it was ignored or taken as is.
// Every JSON body is also sent with bytes that are not UTF-8 (400 invalid_request).

/** `$ref` and single-`allOf` resolved; what the referring schema says itself (nullable, example, description) wins. */
function deref(doc: any, s: Schema): Schema {
  const { $ref, allOf, ...own } = s;
  if ($ref) return { ...deref(doc, doc.components.schemas[$ref.split('/').pop()!]), ...own };
  if (allOf?.length === 1) return { ...deref(doc, allOf[0]), ...own };
  return s;
}

function typeOf(s: Schema): string | undefined {
  if (s.type) return s.type;
  if (s.properties) return 'object';
  if (s.enum?.every((v) => typeof v === 'string')) return 'string';
  return undefined;
}

/** A small valid value of the schema: its example, default or first enum value, else the least that satisfies it. */
function minimalOf(doc: any, schema: Schema, depth = 0): unknown {
  const s = deref(doc, schema);
  if (s.example !== undefined) return structuredClone(s.example);
  if (s.default !== undefined && s.default !== null) return structuredClone(s.default);
  if (s.enum?.length) return s.enum[0];
  if (s.oneOf?.length) return minimalOf(doc, s.oneOf[0], depth + 1);
  switch (typeOf(s)) {
    case 'integer':
    case 'number':
      return s.minimum ?? 1;
    case 'boolean':
      return true;
    case 'string':
      return 'fuzz'.padEnd(s.minLength ?? 4, 'z');
    case 'array':
      return depth > 5 || !s.items ? [] : [minimalOf(doc, s.items, depth + 1)];
    case 'object': {
      const out: Record<string, unknown> = {};
      if (depth <= 5) for (const k of s.required ?? []) if (s.properties?.[k]) out[k] = minimalOf(doc, s.properties[k], depth + 1);
      return out;
    }
    default:
      return 'fuzz';
  }
}

interface Field {
  /** Property names and array indexes from the body's root. */
  path: Array<string | number>;
  schema: Schema;
  /** The schemas of the containers on the way (for building an otherwise valid body). */
  parents: Schema[];
}

function fieldsOf(doc: any, root: Schema): Field[] {
  const out: Field[] = [];
  const walk = (schema: Schema, path: Array<string | number>, parents: Schema[]) => {
    const s = deref(doc, schema);
    if (path.length > 6) return;
    if (path.length) out.push({ path, schema: s, parents });
    if (s.properties) for (const [k, p] of Object.entries(s.properties)) walk(p, [...path, k], [...parents, s]);
    if (typeOf(s) === 'array' && s.items) {
      const item = deref(doc, s.items);
      if (item.properties) walk(item, [...path, 0], [...parents, s]);
    }
  };
  walk(root, [], []);
  return out;
}

const WRONG_TYPES: Record<string, unknown> = { string: 'fuzz', integer: 7, number: 7.5, boolean: true, array: [], object: {} };

/** The values tried for one field: [value, label, forbidden by the schema]. */
function mutationsOf(s: Schema): Array<[unknown, string, boolean]> {
  const type = typeOf(s);
  const out: Array<[unknown, string, boolean]> = [[null, 'null', !s.nullable && type !== undefined]];
  if (!type || s.oneOf) return out;
  for (const [t, v] of Object.entries(WRONG_TYPES)) {
    if (t === type || (type === 'number' && t === 'integer')) continue;
    out.push([v, `a ${t}`, true]);
  }
  if (type === 'integer') out.push([1.5, 'a fraction', true], ['5', 'a numeric string', true]);
  if (s.minimum !== undefined) out.push([s.minimum - 1, `minimum - 1`, true]);
  if (s.maximum !== undefined) out.push([s.maximum + 1, `maximum + 1`, true]);
  if (s.maxLength !== undefined) out.push(['x'.repeat(s.maxLength + 1), `maxLength + 1`, true]);
  if (s.minLength !== undefined && s.minLength > 0) out.push(['', 'shorter than minLength', true]);
  if (s.enum?.length && type === 'string') out.push(['not_one_of_the_enum', 'not in the enum', true]);
  const values = s.additionalProperties && typeof s.additionalProperties === 'object' ? typeOf(s.additionalProperties) : undefined;
  if (values) {
    for (const [t, v] of Object.entries(WRONG_TYPES)) if (t !== values && !(values === 'number' && t === 'integer')) out.push([{ fuzz_key: v }, `a map with a ${t} value`, true]);
    out.push([{ fuzz_key: null }, 'a map with a null value', !(s.additionalProperties as Schema).nullable]);
  }
  return out;
}

/** The body with the field at `path` set to `value`: containers on the way are minimal valid values (an array: one item). */
function bodyWith(doc: any, root: Schema, field: Field, value: unknown): unknown {
  const body: any = minimalOf(doc, root);
  let at: any = body;
  field.path.forEach((key, i) => {
    if (i === field.path.length - 1) {
      at[key] = value;
      return;
    }
    const child = field.parents[i + 1];
    if (at[key] === null || typeof at[key] !== 'object' || Array.isArray(at[key]) !== (typeOf(child) === 'array')) at[key] = minimalOf(doc, child);
    at = at[key];
  });
  return body;
}

/** Path parameters: the first real fixture of the kind the segment before names (versions: "1"). */
function fixturePath(op: Operation, fixtures: Fixtures): string {
  const segments = op.path.split('/');
  return segments
    .map((seg, i) => {
      if (!/^\{.+\}$/.test(seg)) return seg;
      if (segments[i - 1] === 'versions') return '1';
      const kind = RESOURCE_BY_COLLECTION[segments[i - 1]];
      return kind && fixtures[kind].length ? fixtures[kind][0] : 'x';
    })
    .join('/');
}

/** Strings in the body that are not UTF-8: a lone continuation byte, a truncated sequence, an overlong `/`, a UTF-16 surrogate as UTF-8. */
const NOT_UTF8 = [[0x80], [0xc3], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xff]];

function systematicRequests(doc: any, ops: Operation[], fixtures: Fixtures): FuzzRequest[] {
  const out: FuzzRequest[] = [];
  const headers = (op: Operation, i: number) => ({
    authorization: `Bearer ${KEYS.adminA}`,
    accept: op.path.endsWith('/events') ? 'text/event-stream' : 'application/json',
    'x-request-id': `sys-${i}`,
    ...(op.method === 'POST' ? { 'idempotency-key': `sys-${SEED}-${i}` } : {}),
  });
  for (const op of ops) {
    const path = fixturePath(op, fixtures);
    if (op.body?.type === 'json') {
      const root = op.body.schema;
      for (const field of fieldsOf(doc, root)) {
        for (const [value, label, forbidden] of mutationsOf(field.schema)) {
          const body = JSON.stringify(boundedWait(bodyWith(doc, root, field, value)));
          out.push({ method: op.method, path, headers: { ...headers(op, out.length), 'content-type': 'application/json' }, body, note: `${field.path.join('.')} = ${label}`, mustReject: forbidden });
        }
      }
      // Bytes that are not UTF-8 in the first free-text field (else in an extra one): never stored as U+FFFD.
      const text = fieldsOf(doc, root).find((f) => typeOf(f.schema) === 'string' && !f.schema.enum);
      NOT_UTF8.forEach((bytes, k) => {
        const marker = `@@${k}@@`;
        const base = JSON.stringify(text ? bodyWith(doc, root, text, marker) : { ...(minimalOf(doc, root) as object), fuzz_text: marker });
        const [before, after] = base.split(marker);
        const body = Buffer.concat([Buffer.from(before), Buffer.from(bytes), Buffer.from(after)]);
        out.push({ method: op.method, path, headers: { ...headers(op, out.length), 'content-type': 'application/json' }, body: new Uint8Array(body), note: `not UTF-8 (${Buffer.from(bytes).toString('hex')})`, code: 'invalid_request' });
      });
    }
    for (const p of op.parameters.filter((x) => x.in === 'query')) {
      const s = deref(doc, p.schema ?? {});
      const bounded = (typeOf(s) === 'integer' || typeOf(s) === 'number') && (s.minimum ?? -1) >= 0;
      const values: Array<[string, boolean]> = [
        ['%00', true],
        ['0x10', bounded || !!s.enum || p.name === 'after'],
        ['-1', bounded || !!s.enum || p.name === 'after'],
      ];
      if (s.enum?.length) values.push(['sideways', true]);
      for (const [v, forbidden] of values) {
        out.push({ method: op.method, path: `${path}?${encodeURIComponent(p.name)}=${v}`, headers: headers(op, out.length), note: `query ${p.name}=${v}`, mustReject: forbidden });
      }
    }
  }
  return out;
}

/**
 * Valid pagination parameters must change the answer (a route that ignores its query answers the
 * same page to all of them): `limit=1` gives at most one item, `order=desc` the `asc` items reversed,
 * and `after=<first id>` starts at the second item.
 */
async function ignoredQueryProblems(t: TestApp, lists: Operation[], fixtures: Fixtures): Promise<string[]> {
  const problems: string[] = [];
  const get = async (path: string) => {
    const res = await fetch(t.url + path, { headers: { authorization: `Bearer ${KEYS.adminA}`, accept: 'application/json' } });
    return { status: res.status, body: (await res.json().catch(() => null)) as any };
  };
  const ordered: string[] = [];
  const key = (item: any) => `${item.id ?? ''}|${item.version ?? ''}|${item.sequence ?? item.session_sequence ?? ''}`;
  for (const op of lists) {
    const path = fixturePath(op, fixtures);
    const has = (name: string) => op.parameters.some((p) => p.in === 'query' && p.name === name);
    const one = await get(`${path}?limit=1`);
    if (one.status === 200 && one.body.data.length > 1) problems.push(`GET ${path}?limit=1 -> ${one.body.data.length} items`);
    if (!has('order')) continue;
    const asc = await get(`${path}?order=asc&limit=100`);
    const desc = await get(`${path}?order=desc&limit=100`);
    if (asc.status !== 200 || desc.status !== 200 || asc.body.data.length < 2 || asc.body.has_more) continue;
    ordered.push(op.path);
    const a = asc.body.data.map(key);
    const d = desc.body.data.map(key);
    if (JSON.stringify([...a].reverse()) !== JSON.stringify(d)) problems.push(`GET ${path}: order=desc is not order=asc reversed (${a.slice(0, 3).join(', ')} ... / ${d.slice(0, 3).join(', ')} ...)`);
    if (has('after') && 'first_id' in asc.body) {
      const next = await get(`${path}?order=asc&limit=100&after=${encodeURIComponent(asc.body.data[0].id)}`);
      if (next.status !== 200 || key(next.body.data[0] ?? {}) !== a[1]) problems.push(`GET ${path}?order=asc&after=<first id> -> ${next.status}, does not start at the second item`);
    }
  }
  process.stdout.write(`fuzz (systematic): limit=1 checked on ${lists.length} lists, order and after on ${ordered.length} (${ordered.join(' ')})\n`);
  return problems;
}

function operationsOf(doc: any): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      const content = op.requestBody?.content ?? {};
      operations.push({
        method: method.toUpperCase(),
        path,
        parameters: op.parameters ?? [],
        body: content['multipart/form-data'] ? { type: 'multipart' } : content['application/json'] ? { type: 'json', schema: content['application/json'].schema } : null,
        ok: op.responses?.['200']?.content?.['application/json']?.schema,
      });
    }
  }
  return operations;
}

async function sendAll(t: TestApp, requests: FuzzRequest[], order: number[]): Promise<{ sent: number; problems: string[] }> {
  const problems: string[] = [];
  let next = 0;
  let sent = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < order.length) {
        const r = requests[order[next++]];
        const problem = await send(t, r);
        if (problem === 'skipped') continue;
        sent++;
        if (problem) problems.push(problem);
      }
    }),
  );
  return { sent, problems };
}

describe('fuzzing every operation of /docs-json', () => {
  let t: TestApp;
  // Jest often runs this (long) suite first, when the app's first start also pays for the transform.
  beforeAll(async () => {
    t = await startTestApp();
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  }, 60_000);

  it('every body field and query parameter, one at a time: null, wrong types, out of range, not UTF-8 (4xx, never 5xx or ignored)', async () => {
    const doc = (await (await fetch(`${t.url}/docs-json`)).json()) as any;
    const operations = operationsOf(doc);
    // A collection GET (its answer has `has_more`) documents and validates the shared pagination parameters.
    const lists = operations.filter((op) => op.method === 'GET' && op.ok && deref(doc, op.ok).properties?.has_more);
    expect(lists.length).toBeGreaterThanOrEqual(10);
    const unpaged = lists.filter((op) => !['after', 'limit'].every((n) => op.parameters.some((p) => p.in === 'query' && p.name === n))).map((op) => op.path);
    const fixtures = await fixturesFor(t);
    const requests = systematicRequests(doc, operations, fixtures);
    const started = Date.now();
    const { sent, problems } = await sendAll(t, requests, requests.map((_, i) => i));
    problems.push(...(await ignoredQueryProblems(t, lists, fixtures)));
    process.stdout.write(`fuzz (systematic): ${sent} sent in ${Date.now() - started} ms; ${problems.length} problems\n`);
    if (process.env.FUZZ_REPORT) writeFileSync(`${process.env.FUZZ_REPORT}.systematic`, problems.join('\n') + '\n');
    expect(sent).toBeGreaterThanOrEqual(500);
    expect(problems.slice(0, 15)).toEqual([]);
    expect(unpaged).toEqual([]);
  }, 180_000);

  it(`${TOTAL} requests: no 5xx, the envelope and X-Request-Id on every error, no stack or SQL, healthy afterwards`, async () => {
    process.stdout.write(`fuzz: seed ${SEED}, ${TOTAL} requests (replay: FUZZ_SEED=${SEED} FUZZ_REQUESTS=${TOTAL})\n`);
    const doc = (await (await fetch(`${t.url}/docs-json`)).json()) as any;
    const fixtures = await fixturesFor(t);
    const operations = operationsOf(doc);
    expect(operations.length).toBeGreaterThanOrEqual(25);
    const perOp = Math.ceil(TOTAL / operations.length);
    const requests: FuzzRequest[] = [];
    operations.forEach((op, i) => requests.push(...fc.sample(requestsOf(doc, op, fixtures), { seed: SEED + i, numRuns: perOp })));
    // Interleaved (operation by operation), so a DELETE does not take every later request's fixture at once.
    const order = requests.map((_, i) => i).sort((a, b) => (a % perOp) - (b % perOp) || a - b);

    const { sent, problems } = await sendAll(t, requests, order);
    process.stdout.write(`fuzz: ${sent} sent, by status: ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}; ${problems.length} problems\n`);
    // FUZZ_REPORT=<file>: every problem, one a line (the assertion shows the first 15).
    if (process.env.FUZZ_REPORT) writeFileSync(process.env.FUZZ_REPORT, problems.join('\n') + '\n');
    expect(sent).toBeGreaterThanOrEqual(2000);
    expect(problems.slice(0, 15)).toEqual([]);

    const health = await fetch(`${t.url}/healthz`);
    expect(health.status).toBe(200);
    expect((await fetch(`${t.url}/readyz`)).status).toBe(200);
    const verify = await t.call(KEYS.adminA, 'GET', '/v1/admin/audit/verify');
    expect(verify.body.ok).toBe(true);
  }, 240_000);
});
