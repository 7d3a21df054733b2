import { OutboundHttpClient } from '../../src/common/outbound/outbound-http';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * The allow-list as an attacker probes it (issue #31 item 2, CONTRACT section 13): an entry
 * without a port is the default port only, encoded separators never pass, and with API_KEYS set
 * and no OUTBOUND_URL_ALLOWLIST nothing goes out at all.
 */
describe('OUTBOUND_URL_ALLOWLIST', () => {
  const tool = (url: string) => ({ id: 'probe', tools: [{ type: 'http', name: 'probe', parameters: { type: 'object' }, url }] });
  const mcp = (url: string) => ({ id: 'probe', tools: [{ type: 'mcp', server: 'probe', url }] });

  describe('with explicit entries', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ OUTBOUND_URL_ALLOWLIST: 'http://127.0.0.1:80/ok,https://api.example.com/hooks' });
    });
    afterAll(async () => t?.close());

    it.each([
      ['another port than an entry without one (default port only)', 'https://api.example.com:8443/hooks/x'],
      ['another port than an explicit :80', 'http://127.0.0.1:8080/ok/x'],
      ['an encoded / escaping the prefix', 'http://127.0.0.1/ok/..%2fadmin'],
      ['an encoded / (upper case)', 'http://127.0.0.1/ok/..%2Fadmin'],
      ['an encoded \\', 'http://127.0.0.1/ok/..%5cadmin'],
      ['a path outside the prefix', 'http://127.0.0.1/okay'],
    ])('refuses %s: 400 at definition (http, mcp, webhook)', async (_what, url) => {
      const h = await t.call(KEYS.adminA, 'POST', '/v1/agents', tool(url));
      expect(h.status).toBe(400);
      expect(h.body.error.details.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'tools[0].url', message: 'is not inside OUTBOUND_URL_ALLOWLIST' })]));
      const m = await t.call(KEYS.adminA, 'POST', '/v1/agents', mcp(url));
      expect(m.status).toBe(400);
      expect(m.body.error.details.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field: 'tools[0].url' })]));
      const w = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', { url, events: ['run.completed'] });
      expect(w.status).toBe(400);
      expect(w.body.error.code).toBe('invalid_request');
    });

    it('accepts the default port, written or not, inside the prefix', async () => {
      for (const url of ['https://api.example.com/hooks/in', 'https://api.example.com:443/hooks/in2']) {
        const w = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', { url, events: ['run.completed'] });
        expect(w.status).toBe(201);
      }
      const p = t.app.get(OutboundHttpClient).policy;
      expect(p.allows('http://127.0.0.1/ok/x')).toBe(true);
      expect(p.allows('http://127.0.0.1:80/ok/x')).toBe(true);
    });
  });

  describe('with API_KEYS set and no OUTBOUND_URL_ALLOWLIST', () => {
    let t: TestApp;
    beforeAll(async () => {
      // '' is unset: the default, which is empty once API_KEYS is set (the test helper sets API_KEYS).
      t = await startTestApp({ OUTBOUND_URL_ALLOWLIST: '' });
    });
    afterAll(async () => t?.close());

    it('is empty: every tool URL and webhook URL, loopback included, is 400', async () => {
      expect(t.config.outboundUrlAllowlist).toEqual([]);
      expect(t.app.get(OutboundHttpClient).policy.closed).toBe(true);
      for (const url of ['http://127.0.0.1:9/x', 'http://localhost:9/x', 'https://api.example.com/x']) {
        expect((await t.call(KEYS.adminA, 'POST', '/v1/agents', tool(url))).status).toBe(400);
        expect((await t.call(KEYS.adminA, 'POST', '/v1/agents', mcp(url))).status).toBe(400);
        expect((await t.call(KEYS.adminA, 'POST', '/v1/webhooks', { url, events: ['run.completed'] })).status).toBe(400);
      }
    });
  });
});
