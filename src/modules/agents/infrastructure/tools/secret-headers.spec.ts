import { QueryBus } from '@nestjs/cqrs';
import { loadConfig } from '../../../../common/config/app-config';
import { ResolveSecretsQuery } from '../../../secrets/application/queries/resolve-secrets/resolve-secrets.query';
import { HeaderSecrets, SECRET_UNAVAILABLE, SecretRedactor } from './secret-headers';

/** The secrets module's answer, as a table: tenant -> name -> value. */
function secretsOf(table: Record<string, Record<string, string>>): { bus: QueryBus; asked: ResolveSecretsQuery[] } {
  const asked: ResolveSecretsQuery[] = [];
  const bus = {
    execute: async (q: ResolveSecretsQuery) => {
      asked.push(q);
      return new Map(q.names.filter((n) => table[q.tenantId]?.[n] !== undefined).map((n) => [n, table[q.tenantId][n]]));
    },
  } as unknown as QueryBus;
  return { bus, asked };
}

describe('HeaderSecrets (CONTRACT section 13)', () => {
  const env = { CRM_TOKEN: 'crm-value', PAY_KEY: 'pay-value', API_KEYS: 'k:t:s:admin', UNLISTED: 'x' };
  const config = loadConfig({ TOOL_ENV_SECRETS: 'CRM_TOKEN,PAY_KEY@tenant_a,NOT_SET' });
  const { bus, asked } = secretsOf({ tenant_a: { CRM: 'a-secret' }, tenant_b: { CRM: 'b-secret' } });
  const s = new HeaderSecrets(config, bus);

  it('resolves ${secret:NAME} in the tool tenant and ${env:NAME} only as TOOL_ENV_SECRETS lists it', async () => {
    const a = await s.resolve('tenant_a', { Authorization: 'Bearer ${secret:CRM}', 'X-Env': '${env:CRM_TOKEN}/${env:PAY_KEY}', 'X-Plain': 'v' }, env);
    expect(a).toMatchObject({ headers: { Authorization: 'Bearer a-secret', 'X-Env': 'crm-value/pay-value', 'X-Plain': 'v' } });
    const b = await s.resolve('tenant_b', { Authorization: 'Bearer ${secret:CRM}' }, env);
    expect(b).toMatchObject({ headers: { Authorization: 'Bearer b-secret' } });
    expect(asked.map((q) => [q.tenantId, q.names])).toEqual([
      ['tenant_a', ['CRM']],
      ['tenant_b', ['CRM']],
    ]);
  });

  it.each([
    ['a variable of the service configuration', 'tenant_a', '${env:API_KEYS}'],
    ['a variable not listed', 'tenant_a', '${env:UNLISTED}'],
    ['a variable listed for another tenant', 'tenant_b', '${env:PAY_KEY}'],
    ['a listed variable that is not set', 'tenant_a', '${env:NOT_SET}'],
    ['a secret the tenant does not have', 'tenant_b', '${secret:OTHER}'],
    ['a secret outside any tenant (file agent tools/list)', null, '${secret:CRM}'],
    ['a malformed reference', 'tenant_a', '${vault:CRM}'],
  ])('names %s as unavailable, by header only', async (_what, tenant, value) => {
    expect(await s.resolve(tenant, { 'X-Ok': 'v', 'X-Key': value }, env)).toEqual({ unavailable: 'X-Key' });
  });

  it('checks definitions: one message for every kind of unavailable name', async () => {
    const errors = await s.check(
      'tenant_b',
      [
        'get_time',
        { type: 'http', name: 'q', parameters: {}, url: 'http://127.0.0.1/q', headers: { A: '${env:API_KEYS}', B: '${env:UNLISTED}', C: '${secret:CRM}' } },
        { type: 'mcp', server: 'm', url: 'http://127.0.0.1/m', headers: { D: '${secret:NOPE}', E: '${env:CRM_TOKEN}' } },
      ],
      env,
    );
    expect(errors).toEqual([
      { field: 'tools[1].headers.A', message: SECRET_UNAVAILABLE },
      { field: 'tools[1].headers.B', message: SECRET_UNAVAILABLE },
      { field: 'tools[2].headers.D', message: SECRET_UNAVAILABLE },
    ]);
  });

  it('the redactor masks every resolved value in answers, longest first, keys too', async () => {
    const r = await s.resolve('tenant_a', { A: '${secret:CRM}', B: 'Bearer ${env:CRM_TOKEN}' }, env);
    if (!('redactor' in r)) throw new Error('expected resolved headers');
    expect(r.redactor.json({ echo: 'got a-secret and Bearer crm-value', ['a-secret']: [1, 'crm-value'], n: 3, z: null })).toEqual({
      echo: 'got [secret:CRM] and Bearer [secret:CRM_TOKEN]',
      '[secret:CRM]': [1, '[secret:CRM_TOKEN]'],
      n: 3,
      z: null,
    });
    const nested = new SecretRedactor([
      { name: 'SHORT', value: 'abc' },
      { name: 'LONG', value: 'xxabcxx' },
    ]);
    expect(nested.text('xxabcxx abc')).toBe('[secret:LONG] [secret:SHORT]');
    expect(SecretRedactor.none.json({ a: 'abc' })).toEqual({ a: 'abc' });
  });
});
