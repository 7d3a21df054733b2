/**
 * A small typed client for the Agent API over `fetch` (Node >= 20 or a browser).
 *
 * Types come from `./schema` (generated from the service's OpenAPI document); this file adds
 * authentication, JSON, the error envelope as a typed `ApiError`, automatic `Idempotency-Key`
 * headers on POSTs (reused across the client's own retries, so a retry never runs twice), and
 * bounded retries of retryable failures (network errors, 429/503, `retryable: true`).
 */
import type { components, paths } from './schema';

export type Schemas = components['schemas'];
export type Agent = Schemas['AgentResponseDto'];
export type CreateAgentRequest = Schemas['CreateAgentRequestDto'];
export type CreateAgentVersionRequest = Schemas['CreateAgentVersionRequestDto'];
export type Session = Schemas['SessionResponseDto'];
export type CreateSessionRequest = Schemas['CreateSessionRequestDto'];
export type UpdateSessionRequest = Schemas['UpdateSessionRequestDto'];
export type Message = Schemas['MessageResponseDto'];
export type Run = Schemas['RunResponseDto'];
export type RunStatus = Run['status'];
export type RunReceipt = Schemas['RunReceiptDto'];
/** An accepted input's persistent receipt (CONTRACT section 7): where it went and which run took it. */
export type InputReceipt = Schemas['InputReceiptDto'];
export type WorkStatus = Session['work_status'];
export type CreateRunRequest = Schemas['CreateRunRequestDto'];
export type SubmitToolOutputsRequest = Schemas['SubmitToolOutputsRequestDto'];
/** One event (the envelope with the `data` of its `type`): a union discriminated by `type`. */
export type RunEventEnvelope = Schemas['RunEvent'];
export type ContentPart = Schemas['ContentPart'];
export type RunEventPage = Schemas['RunEventListResponseDto'];
export type Approval = Schemas['ApprovalResponseDto'];
export type DecideApprovalRequest = Schemas['DecideApprovalRequestDto'];
export type Attachment = Schemas['AttachmentResponseDto'];
export type AuditRecord = Schemas['AuditRecordResponseDto'];
export type AuditVerifyResult = Schemas['AuditVerifyResponseDto'];
export type ErrorBody = Schemas['ErrorBodyDto'];
export type WebhookEndpoint = Schemas['WebhookResponseDto'];
export type WebhookWithSecret = Schemas['WebhookWithSecretResponseDto'];
export type CreateWebhookRequest = Schemas['CreateWebhookRequestDto'];
export type UpdateWebhookRequest = Schemas['UpdateWebhookRequestDto'];
export type WebhookDelivery = Schemas['WebhookDeliveryResponseDto'];
export type Secret = Schemas['SecretResponseDto'];
export type Automation = Schemas['AutomationResponseDto'];
export type CreateAutomationRequest = Schemas['CreateAutomationRequestDto'];
export type UpdateAutomationRequest = Schemas['UpdateAutomationRequestDto'];
export type AutomationInvocation = Schemas['AutomationInvocationResponseDto'];

/** A page of a collection (`{"object":"list","data":[...],"first_id","last_id","has_more"}`). */
export interface ListPage<T> {
  object: 'list';
  data: T[];
  first_id?: string | null;
  last_id?: string | null;
  has_more: boolean;
}

type QueryOf<P extends keyof paths, M extends 'get'> = paths[P][M] extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
export type ListQuery = QueryOf<'/v1/sessions', 'get'>;
export type AuditQuery = QueryOf<'/v1/admin/audit', 'get'>;

export const TERMINAL_RUN_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled', 'expired', 'terminated'];
export const isTerminal = (status: RunStatus): boolean => TERMINAL_RUN_STATUSES.includes(status);

/** A non-2xx answer of the API (the contract's error envelope), or a transport failure. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    /** HTTP status; 0 when the request never got an answer (network error). */
    readonly status: number,
    /** Contract error code (`session_not_found`, `session_busy`, ...); `network_error` for transport failures. */
    readonly code: string,
    message: string,
    readonly type: ErrorBody['type'] | 'network',
    readonly retryable: boolean,
    readonly requestId: string | null,
    readonly details: Record<string, unknown> = {},
    readonly runId: string | null = null,
    /** Seconds from `Retry-After`, when the server sent one. */
    readonly retryAfterS: number | null = null,
  ) {
    super(message);
  }

  /** Builds an ApiError from a fetch Response (parses the envelope; tolerates a non-JSON body). */
  static async fromResponse(res: Response): Promise<ApiError> {
    const text = await res.text().catch(() => '');
    const retryAfter = Number(res.headers.get('retry-after'));
    const retryAfterS = Number.isFinite(retryAfter) && retryAfter >= 0 && res.headers.has('retry-after') ? retryAfter : null;
    let body: { error?: Partial<ErrorBody> } | undefined;
    try {
      body = text ? (JSON.parse(text) as { error?: Partial<ErrorBody> }) : undefined;
    } catch {
      body = undefined;
    }
    const e = body?.error;
    if (e && typeof e.code === 'string') {
      return new ApiError(
        res.status,
        e.code,
        e.message ?? e.code,
        e.type ?? 'server_error',
        e.retryable === true,
        e.request_id ?? res.headers.get('x-request-id'),
        (e.details as Record<string, unknown>) ?? {},
        e.run_id ?? null,
        retryAfterS,
      );
    }
    const retryable = res.status === 429 || res.status === 502 || res.status === 503 || res.status === 504;
    return new ApiError(res.status, `http_${res.status}`, text.slice(0, 200) || res.statusText, 'server_error', retryable, res.headers.get('x-request-id'), {}, null, retryAfterS);
  }

  static network(err: unknown): ApiError {
    const msg = err instanceof Error ? err.message + (err.cause instanceof Error ? ` (${err.cause.message})` : '') : String(err);
    return new ApiError(0, 'network_error', msg, 'network', true, null);
  }
}

export interface ClientOptions {
  /** Service root, e.g. `http://127.0.0.1:3000` (no `/v1`). */
  baseUrl: string;
  apiKey: string;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
  /** Retries of retryable failures per request (default 2). 0 disables retries. */
  retries?: number;
  /**
   * Base retry delay in ms (default 250): the n-th retry waits a random time in [d/2, d) with
   * d = base * 2^n, capped at 5 s (jitter, so clients that failed together do not retry
   * together); a larger Retry-After wins, plus up to 20% jitter.
   */
  retryDelayMs?: number;
  /** Idempotency keys for POSTs (default: `crypto.randomUUID()`). */
  idempotencyKey?: () => string;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | null | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /** The Idempotency-Key to send: POST and PUT always send one (default: a fresh one per call, reused across retries); other methods only this one. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

const enc = encodeURIComponent;

/** The longest wait between two retries of one request. */
export const MAX_RETRY_DELAY_MS = 5000;

/**
 * The wait before retry `attempt` (0 for the first): "equal jitter" over an exponential
 * backoff - a random point of [d/2, d) with d = min(5 s, base * 2^attempt) - or, when the server
 * asked for longer with Retry-After, that plus up to 20%. `random` is Math.random (tests pass their own).
 */
export function retryDelay(attempt: number, baseMs: number, retryAfterS: number | null, random: () => number = Math.random): number {
  const d = Math.min(MAX_RETRY_DELAY_MS, baseMs * 2 ** attempt);
  const jittered = d / 2 + random() * (d / 2);
  const floor = (retryAfterS ?? 0) * 1000;
  return Math.round(floor > jittered ? floor * (1 + 0.2 * random()) : jittered);
}

export class AgentApiClient {
  readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  private readonly retries: number;
  private readonly retryDelayMs: number;
  private readonly newKey: () => string;

  constructor(private readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetchImpl = options.fetch ?? ((...args) => fetch(...args));
    this.retries = Math.max(0, options.retries ?? 2);
    this.retryDelayMs = options.retryDelayMs ?? 250;
    this.newKey = options.idempotencyKey ?? (() => globalThis.crypto.randomUUID());
  }

  /** Headers every call sends (also used by the SSE reader). */
  authHeaders(): Record<string, string> {
    return { authorization: `Bearer ${this.options.apiKey}` };
  }

  url(path: string, query?: RequestOptions['query']): string {
    const u = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== '') u.searchParams.set(k, String(v));
    return u.toString();
  }

  /** The raw fetch used by this client (for the SSE helper). */
  get fetcher(): typeof fetch {
    return this.fetchImpl;
  }

  /** One JSON call; returns the parsed body (undefined for 204). Throws ApiError for non-2xx. */
  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json', ...this.authHeaders(), ...opts.headers };
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    if (method === 'POST' || method === 'PUT') headers['idempotency-key'] = opts.idempotencyKey ?? this.newKey();
    else if (opts.idempotencyKey !== undefined) headers['idempotency-key'] = opts.idempotencyKey;
    const url = this.url(path, opts.query);
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    for (let attempt = 0; ; attempt++) {
      let error: ApiError;
      try {
        const res = await this.fetchImpl(url, { method, headers, body, signal: opts.signal });
        if (res.ok) {
          if (res.status === 204) return undefined as T;
          const text = await res.text();
          return (text ? JSON.parse(text) : undefined) as T;
        }
        error = await ApiError.fromResponse(res);
      } catch (err) {
        if (opts.signal?.aborted) throw err;
        error = err instanceof ApiError ? err : ApiError.network(err);
      }
      if (!error.retryable || attempt >= this.retries) throw error;
      await sleep(retryDelay(attempt, this.retryDelayMs, error.retryAfterS), opts.signal);
    }
  }

  // ---- agents
  listAgents(): Promise<ListPage<Agent>> {
    return this.request('GET', '/v1/agents');
  }
  getAgent(id: string): Promise<Agent> {
    return this.request('GET', `/v1/agents/${enc(id)}`);
  }
  /** Admin: version "1" of a new API agent (http, mcp and function tools; CONTRACT section 13). */
  createAgent(body: CreateAgentRequest, opts: Pick<RequestOptions, 'idempotencyKey'> = {}): Promise<Agent> {
    return this.request('POST', '/v1/agents', { body, ...opts });
  }
  /** Admin: the next immutable version of an API agent. */
  createAgentVersion(id: string, body: CreateAgentVersionRequest, opts: Pick<RequestOptions, 'idempotencyKey'> = {}): Promise<Agent> {
    return this.request('POST', `/v1/agents/${enc(id)}/versions`, { body, ...opts });
  }
  listAgentVersions(id: string): Promise<{ object: 'list'; data: Agent[]; has_more: boolean }> {
    return this.request('GET', `/v1/agents/${enc(id)}/versions`);
  }
  getAgentVersion(id: string, version: string): Promise<Agent> {
    return this.request('GET', `/v1/agents/${enc(id)}/versions/${enc(version)}`);
  }
  /** Admin: no new sessions; sessions pinned to its versions keep them. */
  deleteAgent(id: string): Promise<void> {
    return this.request('DELETE', `/v1/agents/${enc(id)}`);
  }

  // ---- sessions
  listSessions(query: ListQuery = {}): Promise<ListPage<Session>> {
    return this.request('GET', '/v1/sessions', { query: query as RequestOptions['query'] });
  }
  createSession(body: CreateSessionRequest = {}, opts: Pick<RequestOptions, 'idempotencyKey'> = {}): Promise<Session> {
    return this.request('POST', '/v1/sessions', { body, ...opts });
  }
  getSession(id: string): Promise<Session> {
    return this.request('GET', `/v1/sessions/${enc(id)}`);
  }
  updateSession(id: string, body: UpdateSessionRequest): Promise<Session> {
    return this.request('POST', `/v1/sessions/${enc(id)}`, { body });
  }
  archiveSession(id: string): Promise<Session> {
    return this.request('POST', `/v1/sessions/${enc(id)}/archive`, { body: {} });
  }
  deleteSession(id: string): Promise<void> {
    return this.request('DELETE', `/v1/sessions/${enc(id)}`);
  }
  /** A session's subagents (CONTRACT 16): the child sessions its runs created, oldest first by default. */
  listSubagents(sessionId: string, query: ListQuery = {}): Promise<ListPage<Session>> {
    return this.request('GET', `/v1/sessions/${enc(sessionId)}/subagents`, { query: query as RequestOptions['query'] });
  }
  listMessages(sessionId: string, query: ListQuery = {}): Promise<ListPage<Message>> {
    return this.request('GET', `/v1/sessions/${enc(sessionId)}/messages`, { query: query as RequestOptions['query'] });
  }
  getMessage(sessionId: string, messageId: string): Promise<Message> {
    return this.request('GET', `/v1/sessions/${enc(sessionId)}/messages/${enc(messageId)}`);
  }

  // ---- runs
  /** Starts a run (202 receipt). An Idempotency-Key is always sent (a fresh one unless given). */
  createRun(sessionId: string, body: CreateRunRequest, opts: Pick<RequestOptions, 'idempotencyKey'> = {}): Promise<RunReceipt> {
    return this.request('POST', `/v1/sessions/${enc(sessionId)}/runs`, { body, ...opts });
  }
  /** Shorthand: a run whose input is one user text. */
  sendText(sessionId: string, text: string, extra: Omit<CreateRunRequest, 'input'> = {}): Promise<RunReceipt> {
    return this.createRun(sessionId, { ...extra, input: { role: 'user', content: [{ type: 'text', text }] } });
  }
  listRuns(sessionId: string, query: ListQuery = {}): Promise<ListPage<Run>> {
    return this.request('GET', `/v1/sessions/${enc(sessionId)}/runs`, { query: query as RequestOptions['query'] });
  }
  /** An input's receipt as it is now (`inp_...`: the `receipt.id` of a 202). */
  getInput(id: string): Promise<InputReceipt> {
    return this.request('GET', `/v1/inputs/${enc(id)}`);
  }
  getRun(id: string): Promise<Run> {
    return this.request('GET', `/v1/runs/${enc(id)}`);
  }
  cancelRun(id: string): Promise<Run> {
    return this.request('POST', `/v1/runs/${enc(id)}/cancel`, { body: {} });
  }
  submitToolOutputs(id: string, body: SubmitToolOutputsRequest): Promise<Run> {
    return this.request('POST', `/v1/runs/${enc(id)}/tool_outputs`, { body });
  }
  /** One JSON page of a run's events (`after` = last sequence seen). */
  listRunEvents(id: string, query: { after?: number; limit?: number } = {}): Promise<RunEventPage> {
    return this.request('GET', `/v1/runs/${enc(id)}/events`, { query });
  }

  // ---- approvals
  listApprovals(runId: string): Promise<ListPage<Approval>> {
    return this.request('GET', `/v1/runs/${enc(runId)}/approvals`);
  }
  decideApproval(runId: string, approvalId: string, body: DecideApprovalRequest): Promise<Approval> {
    return this.request('POST', `/v1/runs/${enc(runId)}/approvals/${enc(approvalId)}`, { body });
  }

  // ---- attachments
  getAttachment(id: string): Promise<Attachment> {
    return this.request('GET', `/v1/attachments/${enc(id)}`);
  }

  // ---- admin audit
  listAudit(query: AuditQuery = {}): Promise<ListPage<AuditRecord>> {
    return this.request('GET', '/v1/admin/audit', { query: query as RequestOptions['query'] });
  }
  verifyAudit(): Promise<AuditVerifyResult> {
    return this.request('GET', '/v1/admin/audit/verify');
  }

  // ---- admin webhooks
  listWebhooks(query: ListQuery = {}): Promise<ListPage<WebhookEndpoint>> {
    return this.request('GET', '/v1/webhooks', { query: query as RequestOptions['query'] });
  }
  /** The answer holds the signing secret (`whsec_...`), shown only here and by `rotateWebhookSecret`. */
  createWebhook(body: CreateWebhookRequest, opts: Pick<RequestOptions, 'idempotencyKey'> = {}): Promise<WebhookWithSecret> {
    return this.request('POST', '/v1/webhooks', { body, ...opts });
  }
  getWebhook(id: string): Promise<WebhookEndpoint> {
    return this.request('GET', `/v1/webhooks/${enc(id)}`);
  }
  updateWebhook(id: string, body: UpdateWebhookRequest): Promise<WebhookEndpoint> {
    return this.request('POST', `/v1/webhooks/${enc(id)}`, { body });
  }
  deleteWebhook(id: string): Promise<void> {
    return this.request('DELETE', `/v1/webhooks/${enc(id)}`);
  }
  rotateWebhookSecret(id: string): Promise<WebhookWithSecret> {
    return this.request('POST', `/v1/webhooks/${enc(id)}/rotate_secret`, { body: {} });
  }
  /** An endpoint's delivery log, newest first. */
  listWebhookDeliveries(id: string, query: { after?: string; limit?: number } = {}): Promise<ListPage<WebhookDelivery>> {
    return this.request('GET', `/v1/webhooks/${enc(id)}/deliveries`, { query });
  }

  // ---- automations (CONTRACT section 17): members their own, admins the tenant's
  listAutomations(query: ListQuery = {}): Promise<ListPage<Automation>> {
    return this.request('GET', '/v1/automations', { query: query as RequestOptions['query'] });
  }
  /** A cron (five fields, IANA time zone) or one-time schedule delivering `input` to a new or existing session. */
  createAutomation(body: CreateAutomationRequest, opts: Pick<RequestOptions, 'idempotencyKey'> = {}): Promise<Automation> {
    return this.request('POST', '/v1/automations', { body, ...opts });
  }
  getAutomation(id: string): Promise<Automation> {
    return this.request('GET', `/v1/automations/${enc(id)}`);
  }
  updateAutomation(id: string, body: UpdateAutomationRequest): Promise<Automation> {
    return this.request('POST', `/v1/automations/${enc(id)}`, { body });
  }
  deleteAutomation(id: string): Promise<void> {
    return this.request('DELETE', `/v1/automations/${enc(id)}`);
  }
  pauseAutomation(id: string): Promise<Automation> {
    return this.request('POST', `/v1/automations/${enc(id)}/pause`);
  }
  resumeAutomation(id: string): Promise<Automation> {
    return this.request('POST', `/v1/automations/${enc(id)}/resume`);
  }
  /** Run now: a manual invocation, answered `queued` and delivered at once. */
  invokeAutomation(id: string): Promise<AutomationInvocation> {
    return this.request('POST', `/v1/automations/${enc(id)}/invocations`);
  }
  listAutomationInvocations(id: string, query: ListQuery = {}): Promise<ListPage<AutomationInvocation>> {
    return this.request('GET', `/v1/automations/${enc(id)}/invocations`, { query: query as RequestOptions['query'] });
  }

  // ---- admin secrets (values are write-only: no call returns one)
  /** Names and versions, ordered by name; `after` is a name. */
  listSecrets(query: ListQuery = {}): Promise<ListPage<Secret>> {
    return this.request('GET', '/v1/secrets', { query: query as RequestOptions['query'] });
  }
  getSecret(name: string): Promise<Secret> {
    return this.request('GET', `/v1/secrets/${enc(name)}`);
  }
  /** Sets `name` (version 1) or rotates it (the next version); http/mcp tool headers name it `${secret:NAME}`. */
  putSecret(name: string, value: string, opts: Pick<RequestOptions, 'idempotencyKey'> = {}): Promise<Secret> {
    return this.request('PUT', `/v1/secrets/${enc(name)}`, { body: { value }, ...opts });
  }
  /** With a key (a fresh one by default): a retry after a lost 204 is replayed, not a 404. */
  deleteSecret(name: string, opts: Pick<RequestOptions, 'idempotencyKey'> = {}): Promise<void> {
    return this.request('DELETE', `/v1/secrets/${enc(name)}`, { idempotencyKey: opts.idempotencyKey ?? this.newKey() });
  }
}
