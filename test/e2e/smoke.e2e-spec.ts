import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

// Late in a full embedded run this start (or fresh migration) took over 60 s (load 8, a 2.3 GB jest
// process): the bound is 180 s; a hang still fails.
jest.setTimeout(180_000);

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('creates and reads a session', async () => {
    const created = await t.call(KEYS.memberA1, 'POST', '/v1/sessions', { title: 'x' });
    expect(created.status).toBe(201);
    const got = await t.call(KEYS.memberA1, 'GET', `/v1/sessions/${created.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body.title).toBe('x');
  });
});
