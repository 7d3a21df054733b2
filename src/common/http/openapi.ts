import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';

export const API_DESCRIPTION = `
Run LLM agents as durable **runs** with ordered, resumable **event streams** (SSE).

**Authentication**: every \`/v1\` route takes \`Authorization: Bearer <api key>\`. The development
key \`dev-key-0001\` (tenant \`tenant_dev\`, admin) works when \`API_KEYS\` is unset (the server then listens on
127.0.0.1 only).

**Errors**: every non-2xx response is \`{"error": {code, message, type, retryable, request_id, run_id, details}}\`
with an \`X-Request-Id\` header. Branch on \`code\`.

**Idempotency**: send \`Idempotency-Key\` on POSTs (required on run and attachment creation): a fresh
UUID per logical operation, the same one for its retries. A retry with the same key and body replays
the stored response with \`Idempotent-Replayed: true\`; the same key with another body is 409
\`idempotency_conflict\`. On this page, "Try it out" sends a fresh UUID (\`crypto.randomUUID()\`) as the key
of every request: leave the pre-filled key (or an empty field) as it is; type a key of your own to
try a replay.

**Pagination**: collections take \`after\`, \`limit\` (1..100) and \`order\` and answer
\`{"object":"list","data":[...],"first_id","last_id","has_more"}\`.

**Events**: \`GET /v1/runs/{id}/events\` and \`GET /v1/sessions/{id}/events\` answer a JSON page, or with
\`Accept: text/event-stream\` an SSE stream whose every \`data:\` is one \`RunEvent\` (see its schema:
one envelope per \`type\`, discriminated by \`type\`).

**Numbers and times**: every number in this API is an integer; every \`*_at\` field is an RFC 3339 UTC
time with milliseconds.
`.trim();

/*
 * Swagger UI on /docs and Idempotency-Key. Both functions below are serialised into the page by
 * @nestjs/swagger (Function#toString), so they use nothing outside their bodies, and share state
 * only through `globalThis.__agentApiDocsKeys`. Swagger UI refuses to send a required parameter
 * left empty, and a pre-filled fixed key would make every "Try it out" after the first a replay
 * (or, with an edited body, 409 idempotency_conflict). So:
 * - `swaggerParameterMacro` pre-fills each Idempotency-Key field with a UUID it remembers;
 * - `swaggerRequestInterceptor` sends, instead of such a pre-filled key (or an empty field), a
 *   fresh UUID on every request: every Execute is a new operation. A key the user typed is
 *   sent as typed (so a replay can be tried on purpose). The curl Swagger UI shows is the sent one.
 */

/** Swagger UI `parameterMacro`: the initial value of a parameter (its default for all but Idempotency-Key). */
export function swaggerParameterMacro(_operation: unknown, parameter: { name?: string; default?: unknown }) {
  if (!parameter || String(parameter.name).toLowerCase() !== 'idempotency-key') return parameter ? parameter.default : undefined;
  var c = globalThis.crypto;
  var key: string;
  if (typeof c.randomUUID === 'function') {
    key = c.randomUUID();
  } else {
    // randomUUID needs a secure context (https or localhost); getRandomValues does not.
    var b = c.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    var hex = '';
    for (var i = 0; i < 16; i++) hex += (b[i] + 0x100).toString(16).slice(1);
    key = hex.slice(0, 8) + '-' + hex.slice(8, 12) + '-' + hex.slice(12, 16) + '-' + hex.slice(16, 20) + '-' + hex.slice(20);
  }
  var g = globalThis as unknown as { __agentApiDocsKeys?: Record<string, boolean> };
  (g.__agentApiDocsKeys = g.__agentApiDocsKeys || {})[key] = true;
  return key;
}

/** Swagger UI `requestInterceptor`: a fresh Idempotency-Key per POST unless the user typed one. */
export function swaggerRequestInterceptor(req: { method?: string; url?: string; headers?: Record<string, string> }) {
  if (String(req.method).toUpperCase() !== 'POST') return req;
  req.headers = req.headers || {};
  var g = globalThis as unknown as { __agentApiDocsKeys?: Record<string, boolean> };
  var generated = g.__agentApiDocsKeys || {};
  var name = 'Idempotency-Key';
  for (var h in req.headers) if (h.toLowerCase() === 'idempotency-key') name = h;
  var value = req.headers[name] === undefined ? '' : String(req.headers[name]).trim();
  if (value !== '' && !generated[value]) return req;
  var c = globalThis.crypto;
  var key: string;
  if (typeof c.randomUUID === 'function') {
    key = c.randomUUID();
  } else {
    var b = c.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    var hex = '';
    for (var i = 0; i < 16; i++) hex += (b[i] + 0x100).toString(16).slice(1);
    key = hex.slice(0, 8) + '-' + hex.slice(8, 12) + '-' + hex.slice(12, 16) + '-' + hex.slice(16, 20) + '-' + hex.slice(20);
  }
  req.headers[name] = key;
  return req;
}

/** JSON Schema nodes of the document (schemas, parameters' schemas, nested ones). */
function walkSchemas(node: unknown, visit: (schema: Record<string, unknown>, key: string | null) => void, key: string | null = null): void {
  if (Array.isArray(node)) {
    for (const n of node) walkSchemas(n, visit, null);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const o = node as Record<string, unknown>;
  visit(o, key);
  for (const [k, v] of Object.entries(o)) {
    if (k === 'example' || k === 'examples') continue;
    if (k === 'properties' && v && typeof v === 'object') {
      for (const [prop, schema] of Object.entries(v as Record<string, unknown>)) walkSchemas(schema, visit, prop);
    } else {
      walkSchemas(v, visit, null);
    }
  }
}

/**
 * `@ApiProperty({ type: ANY_JSON })`: a value of any JSON type. The decorators otherwise write the
 * reflected `unknown` as `type: object`, and clients (and the fuzzer) then take a string for an error;
 * `finalizeOpenApiDocument` drops the marker, leaving a schema without `type` (OpenAPI: any value).
 */
// Typed as one of the decorator's names: it takes only those, and this one never reaches a client.
export const ANY_JSON = 'any-json' as unknown as () => void;

/**
 * What the decorators cannot say, applied to the generated document in one place: component
 * schemas the modules write by hand (`schemas`: the events module's event and content-part
 * schemas, one per type, under discriminators; handed in by the caller, as common imports no
 * module), a server entry (Swagger UI and generators call the origin that served the document),
 * integers (the API has no fractional numbers: counts, sizes, milliseconds, sequences), and
 * `format: date-time` on every `*_at` time.
 */
export function finalizeOpenApiDocument(doc: OpenAPIObject, schemas: Record<string, SchemaObject>): OpenAPIObject {
  doc.servers = [{ url: '/', description: 'The server that serves this document' }];
  doc.components = doc.components ?? {};
  doc.components.schemas = { ...(doc.components.schemas ?? {}), ...schemas };
  walkSchemas(doc, (schema, key) => {
    if (schema.type === 'number') schema.type = 'integer';
    if (schema.type === (ANY_JSON as unknown)) delete schema.type;
    if (key !== null && /_at$/.test(key) && schema.type === 'string' && schema.format === undefined) schema.format = 'date-time';
  });
  return doc;
}

/**
 * Builds the OpenAPI document and serves it (`/docs-json`) with Swagger UI (`/docs`); `schemas`
 * are the hand-written component schemas the modules contribute (see `finalizeOpenApiDocument`).
 */
export function setupOpenApi(app: INestApplication, schemas: Record<string, SchemaObject>): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('Agent API')
    .setDescription(API_DESCRIPTION)
    .setVersion('1.0.0')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'API key', description: 'Your API key, e.g. dev-key-0001' }, 'api-key')
    .addSecurityRequirements('api-key')
    .build();
  const document = finalizeOpenApiDocument(
    SwaggerModule.createDocument(app, builder, { operationIdFactory: (controller, method) => `${controller.replace(/Controller$/, '')}_${method}` }),
    schemas,
  );
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'docs-json',
    swaggerOptions: {
      persistAuthorization: true,
      displayRequestDuration: true,
      parameterMacro: swaggerParameterMacro,
      requestInterceptor: swaggerRequestInterceptor,
    },
    customSiteTitle: 'Agent API docs',
  });
  return document;
}
