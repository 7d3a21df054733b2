import { Injectable } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { AppConfig } from '../../../../common/config/app-config';
import { FieldError } from '../../../../common/errors/domain-error';
import { ResolveSecretsQuery } from '../../../secrets/application/queries/resolve-secrets/resolve-secrets.query';
import { ToolEntry } from '../../domain/agent-definition';
import { SecretRef, secretRefs } from '../../domain/tool-entries';
import { ResolvedSecret, SecretScrubber } from '../../../../common/secrets/secret-scrubber';

/**
 * One message whether the name is not allowed, not listed for this tenant or not defined, so that
 * a tenant cannot probe the server's environment or another tenant's secrets (CONTRACT section 13).
 */
export const SECRET_UNAVAILABLE =
  'names a secret that is not available to this tenant (define it with PUT /v1/secrets/{name}, or ask the operator to list it in TOOL_ENV_SECRETS)';

/**
 * Resolved values, by the name they are shown as: `[secret:NAME]` - the one scrubbing rule
 * (common/secrets/secret-scrubber.ts: raw, encoded, split and cut forms).
 */
export { SecretScrubber as SecretRedactor };

const NON_ASCII = /[^\x00-\x7f]/;

export type ResolvedHeaders = { headers: Record<string, string>; redactor: SecretScrubber; resolved: ResolvedSecret[] } | { unavailable: string };

/**
 * Header values as configured may name secrets: `${secret:NAME}` (the tool's tenant's, from the
 * secrets module) or `${env:NAME}` (only names TOOL_ENV_SECRETS lists for that tenant). They are
 * checked when an agent is defined and resolved at call time; the values are only ever handed to
 * the outbound request, and the redactor masks them in whatever comes back.
 */
@Injectable()
export class HeaderSecrets {
  constructor(
    private readonly config: AppConfig,
    private readonly queries: QueryBus,
  ) {}

  /** `tenantId` null: a shared file agent outside any tenant (only `${env:NAME}` listed for everyone). */
  async resolve(tenantId: string | null, headers: Record<string, string>, env: NodeJS.ProcessEnv = process.env): Promise<ResolvedHeaders> {
    const perHeader: Array<[string, string, SecretRef[]]> = [];
    const secretNames = new Set<string>();
    for (const [k, v] of Object.entries(headers)) {
      const parsed = secretRefs(v);
      if ('problem' in parsed) return { unavailable: k };
      perHeader.push([k, v, parsed.refs]);
      for (const r of parsed.refs) if (r.kind === 'secret') secretNames.add(r.name);
    }
    if (perHeader.every(([, , refs]) => refs.length === 0)) return { headers: { ...headers }, redactor: SecretScrubber.none, resolved: [] };
    let secrets = new Map<string, string>();
    if (secretNames.size > 0) {
      if (tenantId === null) return { unavailable: perHeader.find(([, , refs]) => refs.some((r) => r.kind === 'secret'))![0] };
      secrets = await this.queries.execute(new ResolveSecretsQuery(tenantId, [...secretNames]));
    }
    const out: Record<string, string> = {};
    const used: ResolvedSecret[] = [];
    for (const [k, v, refs] of perHeader) {
      let value = v;
      for (const r of refs) {
        const resolved = r.kind === 'secret' ? secrets.get(r.name) : this.config.toolEnvSecrets.allows(r.name, tenantId) ? env[r.name] : undefined;
        if (resolved === undefined) return { unavailable: k };
        value = value.split(r.token).join(resolved);
        used.push({ name: r.name, value: resolved });
      }
      // A header carries octets: a non-ASCII value goes out as its UTF-8 bytes (Node refuses
      // characters above U+00FF and would send U+0080..U+00FF as single Latin-1 bytes).
      out[k] = NON_ASCII.test(value) ? Buffer.from(value, 'utf8').toString('latin1') : value;
    }
    return { headers: out, redactor: new SecretScrubber(used), resolved: used };
  }

  /** Definition time: a field error for each header of `entries` that names a secret the tenant cannot use. */
  async check(tenantId: string, entries: ToolEntry[], env: NodeJS.ProcessEnv = process.env, field = 'tools'): Promise<FieldError[]> {
    const errors: FieldError[] = [];
    for (const [i, e] of entries.entries()) {
      if (typeof e === 'string' || e.type === 'function' || !e.headers) continue;
      for (const [k, v] of Object.entries(e.headers)) {
        const r = await this.resolve(tenantId, { [k]: v }, env);
        if ('unavailable' in r) errors.push({ field: `${field}[${i}].headers.${k}`, message: SECRET_UNAVAILABLE });
      }
    }
    return errors;
  }
}
