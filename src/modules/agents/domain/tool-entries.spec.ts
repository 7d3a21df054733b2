import { parseToolEntries, secretRefs } from './tool-entries';
import { schemaProblem, validateArguments } from '../infrastructure/tools/ajv-validator';

const checks = { urlAllowed: (u: string) => u.startsWith('http://127.0.0.1'), builtin: (n: string) => n === 'get_time', schemaProblem };

describe('tool entries of agent definitions (CONTRACT section 13)', () => {
  it('accepts built-ins, http, mcp and function entries', () => {
    const { entries, errors } = parseToolEntries(
      [
        'get_time',
        { type: 'http', name: 'quote', parameters: { type: 'object' }, url: 'http://127.0.0.1:9/q', headers: { Authorization: 'Bearer ${env:TOKEN}' }, idempotent: true, timeout_ms: 500 },
        { type: 'mcp', server: 'crm', url: 'http://127.0.0.1:9/mcp', tools: ['lookup'], risk: 'approve' },
        { type: 'function', name: 'ask', parameters: { type: 'object' } },
      ],
      checks,
    );
    expect(errors).toEqual([]);
    expect(entries).toHaveLength(4);
  });

  it('names every problem by field: unknown built-ins, URLs outside the allow-list, bad schemas, unknown keys, duplicates', () => {
    const { errors } = parseToolEntries(
      [
        'nope',
        { type: 'http', name: 'x', parameters: { type: 'object' }, url: 'http://example.com/x' },
        { type: 'http', name: 'y', parameters: { type: 'bogus' }, url: 'http://127.0.0.1/y' },
        { type: 'mcp', server: 'bad server', url: 'ftp://127.0.0.1/' },
        { type: 'function', name: 'get_time', parameters: {}, url: 'http://127.0.0.1' },
        { type: 'teleport' },
        { type: 'function', name: 'dup', parameters: {} },
        { type: 'function', name: 'dup', parameters: {} },
      ],
      checks,
    );
    const fields = errors.map((e) => e.field);
    expect(fields).toEqual(
      expect.arrayContaining(['tools[0]', 'tools[1].url', 'tools[2].parameters', 'tools[3].server', 'tools[3].url', 'tools[4].name', 'tools[4].url', 'tools[5].type', 'tools']),
    );
  });

  it('reads ${secret:NAME} and ${env:NAME} references; any other ${...} in a header is a field error', () => {
    expect(secretRefs('Bearer ${env:A} and ${secret:B_2}')).toEqual({
      refs: [
        { kind: 'env', name: 'A', token: '${env:A}' },
        { kind: 'secret', name: 'B_2', token: '${secret:B_2}' },
      ],
    });
    expect(secretRefs('plain')).toEqual({ refs: [] });
    for (const bad of ['${vault:X}', '${secret:lower}', '${secret:X', '${env:1A}', '${}', '${secret:' + 'A'.repeat(65) + '}']) {
      expect(secretRefs(bad)).toHaveProperty('problem');
      const { errors } = parseToolEntries([{ type: 'http', name: 'q', parameters: { type: 'object' }, url: 'http://127.0.0.1:9/q', headers: { 'X-K': bad } }], checks);
      expect(errors.map((e) => e.field)).toEqual(['tools[0].headers.X-K']);
    }
  });

  it('validates arguments with ajv', () => {
    const schema = { type: 'object', properties: { email: { type: 'string', minLength: 3 } }, required: ['email'], additionalProperties: false };
    expect(validateArguments(schema, { email: 'a@b.c' })).toEqual([]);
    expect(validateArguments(schema, { email: 1 }).join()).toContain('arguments.email');
    expect(validateArguments(schema, {}).length).toBeGreaterThan(0);
    expect(validateArguments(schema, { email: 'abc', x: 1 }).length).toBeGreaterThan(0);
    expect(schemaProblem({ type: 'nope' })).toMatch(/not a valid JSON Schema/);
    expect(schemaProblem({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' })).toBeNull();
  });
});
