import { createSession, script, startRun, userInput } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';
import { WebhookReceiver } from '../helpers/webhook-receiver';

/**
 * Issue 32, SIEM delivery: `audit.recorded`, one per audit record, written with the record when it
 * is chained; a real receiver verifying every delivery with `standardwebhooks` gets every record
 * of a run, each exactly as the export writes it; in order of `seq` after dedup (by webhook-id).
 */
describe('webhooks: audit.recorded (e2e, standardwebhooks receiver)', () => {
  let t: TestApp;
  const siem = new WebhookReceiver();
  const otherTenant = new WebhookReceiver();

  beforeAll(async () => {
    t = await startTestApp({ WEBHOOK_RETRY_BASE_MS: '100' });
    await siem.start();
    await otherTenant.start();
    const created = await t.call(KEYS.adminA, 'POST', '/v1/webhooks', { url: siem.url, events: ['audit.recorded'], description: 'SIEM' });
    expect(created.status).toBe(201);
    expect(created.body.events).toEqual(['audit.recorded']);
    siem.secret = created.body.secret;
    const b = await t.call(KEYS.adminB, 'POST', '/v1/webhooks', { url: otherTenant.url, events: ['audit.recorded'] });
    expect(b.status).toBe(201);
    otherTenant.secret = b.body.secret;
  }, 90_000);
  afterAll(async () => {
    await t.close();
    await siem.stop();
    await otherTenant.stop();
  });

  it('delivers every audit record of a run, signed, as exported, in seq order after dedup; the other tenant hears none of it', async () => {
    const sid = await createSession(t, KEYS.memberA1);
    const run = await startRun(t, KEYS.memberA1, sid, { input: userInput(script([{ tool_calls: [{ name: 'get_time', arguments: {} }] }, { text: 'done' }])), mode: 'sync' });
    expect(run.body.status).toBe('completed');
    const listed = await t.call(KEYS.adminA, 'GET', `/v1/admin/audit?run_id=${run.body.id}&order=asc&limit=100`);
    expect(listed.status).toBe(200);
    const records: Array<{ id: string; seq: number; hash: string }> = listed.body.data;
    expect(records.length).toBeGreaterThan(4);
    const wanted = new Set(records.map((r) => r.id));

    const until = Date.now() + 30_000;
    let got = siem.received.filter((r) => r.status < 300 && wanted.has(r.payload.data?.id));
    while (new Set(got.map((r) => r.payload.data.id)).size < wanted.size) {
      if (Date.now() > until) throw new Error(`audit.recorded: got ${got.length} of ${wanted.size}; invalid ${JSON.stringify(siem.invalid)}`);
      await new Promise((r) => setTimeout(r, 50));
      got = siem.received.filter((r) => r.status < 300 && wanted.has(r.payload.data?.id));
    }
    expect(siem.invalid).toEqual([]);
    // Dedup by webhook-id (a receiver must: delivery is at least once), then order by seq.
    const unique = [...new Map(got.map((r) => [r.webhookId, r])).values()].sort((a, b) => a.payload.data.seq - b.payload.data.seq);
    expect(unique.map((r) => r.payload.data.id)).toEqual(records.map((r) => r.id));
    for (const r of unique) {
      expect(r.payload).toMatchObject({ type: 'audit.recorded', tenant_id: 'tenant_a', id: r.webhookId });
      expect(r.payload.data).toMatchObject({ kind: 'record', tenant_id: 'tenant_a', run_id: run.body.id, hash_alg: 'sha256' });
    }
    // The body's data is the record as the export writes it.
    const exported = (await (await fetch(`${t.url}/v1/admin/audit/export`, { headers: { authorization: `Bearer ${KEYS.adminA}` } })).text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((l) => l.kind === 'record' && wanted.has(l.id));
    expect(unique.map((r) => r.payload.data)).toEqual(exported);
    // Isolation: tenant B's endpoint gets none of tenant A's records.
    await new Promise((r) => setTimeout(r, 300));
    expect(otherTenant.received.filter((r) => r.payload.tenant_id !== 'tenant_b')).toEqual([]);
  });
});
