import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo } from 'node:net';
import { OutboundError, OutboundHttpClient, OutboundUrlPolicy } from './outbound-http';

describe('OutboundUrlPolicy', () => {
  const policy = new OutboundUrlPolicy(['http://127.0.0.1:*', 'http://localhost:8080', 'https://api.example.com/tools', 'http://10.0.0.5', 'https://hooks.example.com:443/in']);

  it.each([
    ['http://127.0.0.1:4567/x', true],
    ['http://127.0.0.1/', true],
    ['http://localhost:8080/a/b', true],
    ['https://api.example.com/tools', true],
    ['https://api.example.com/tools/lookup?q=1', true],
    ['https://api.example.com:443/tools/x', true],
    // An entry without a port: the scheme's default port only.
    ['https://api.example.com:8443/tools/x', false],
    ['http://10.0.0.5/x', true],
    ['http://10.0.0.5:80/x', true],
    ['http://10.0.0.5:8080/x', false],
    // An explicit default port is that port, not "any".
    ['https://hooks.example.com/in/x', true],
    ['https://hooks.example.com:444/in/x', false],
    ['http://localhost:8081/', false],
    ['http://localhost/', false],
    ['https://127.0.0.1/', false],
    ['http://127.0.0.1.evil.example/', false],
    ['http://127.0.0.1@evil.example/', false],
    ['http://user:pw@127.0.0.1/', false],
    ['https://api.example.com/toolsmith', false],
    ['https://api.example.com/', false],
    // Encoded separators escape the prefix on proxies that decode before resolving.
    ['https://api.example.com/tools/..%2fadmin', false],
    ['https://api.example.com/tools/..%2Fadmin', false],
    ['https://api.example.com/tools/..%5cadmin', false],
    ['https://api.example.com/tools/..%5Cadmin', false],
    ['https://api.example.com/tools/a%20b', true],
    ['ftp://127.0.0.1/', false],
    ['not a url', false],
  ])('%s -> %s', (url, allowed) => {
    expect(policy.allows(url)).toBe(allowed);
  });

  it('an explicit port entry allows that port only', () => {
    const p = new OutboundUrlPolicy(['http://127.0.0.1:80/ok']);
    expect(p.allows('http://127.0.0.1/ok/x')).toBe(true);
    expect(p.allows('http://127.0.0.1:80/ok/x')).toBe(true);
    expect(p.allows('http://127.0.0.1:8080/ok/x')).toBe(false);
  });

  it('an empty list allows nothing', () => {
    const p = new OutboundUrlPolicy([]);
    expect(p.closed).toBe(true);
    expect(p.allows('http://127.0.0.1:3000/')).toBe(false);
  });

  it('names problems with allow-list entries', () => {
    expect(OutboundUrlPolicy.entryProblem('http://127.0.0.1')).toBeNull();
    expect(OutboundUrlPolicy.entryProblem('http://127.0.0.1:*')).toBeNull();
    expect(OutboundUrlPolicy.entryProblem('https://[::1]:*/x')).toBeNull();
    expect(OutboundUrlPolicy.entryProblem('nope')).toMatch(/not a URL/);
    expect(OutboundUrlPolicy.entryProblem('http://h:*x')).toMatch(/not a URL/);
    expect(OutboundUrlPolicy.entryProblem('file:///etc')).toMatch(/not an http/);
    expect(OutboundUrlPolicy.entryProblem('http://a:b@x.example')).toMatch(/credentials/);
    expect(OutboundUrlPolicy.entryProblem('http://x.example/a%2Fb')).toMatch(/encoded/);
  });
});

describe('OutboundHttpClient against a real loopback server', () => {
  let server: Server;
  let base: string;
  let hits: string[];

  beforeAll(async () => {
    hits = [];
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      hits.push(req.url ?? '');
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        if (req.url === '/echo') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ got: JSON.parse(body || 'null'), key: req.headers['idempotency-key'] ?? null }));
        } else if (req.url === '/redirect') {
          res.writeHead(302, { location: '/echo' });
          res.end();
        } else if (req.url === '/hang') {
          // never answers
        } else if (req.url === '/big') {
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end('x'.repeat(2048));
        } else if (req.url === '/big-chunked') {
          res.writeHead(200, { 'content-type': 'text/plain' });
          for (let i = 0; i < 8; i++) res.write('y'.repeat(512));
          res.end();
        } else {
          res.writeHead(500);
          res.end('boom');
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  });

  const client = new OutboundHttpClient(new OutboundUrlPolicy(['http://127.0.0.1:*']));

  it('posts and returns status, headers and body', async () => {
    const res = await client.request({
      url: `${base}/echo`,
      headers: { 'content-type': 'application/json', 'idempotency-key': 'run_1:call_1' },
      body: JSON.stringify({ a: 1 }),
      timeoutMs: 5000,
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString('utf8'))).toEqual({ got: { a: 1 }, key: 'run_1:call_1' });
  });

  it('does not follow redirects', async () => {
    hits = [];
    const res = await client.request({ url: `${base}/redirect`, timeoutMs: 5000 });
    expect(res.status).toBe(302);
    expect(hits).toEqual(['/redirect']);
  });

  it('refuses URLs outside the allow-list without sending anything', async () => {
    const strict = new OutboundHttpClient(new OutboundUrlPolicy(['http://localhost:1']));
    hits = [];
    await expect(strict.request({ url: `${base}/echo`, timeoutMs: 5000 })).rejects.toMatchObject({ kind: 'not_allowed' });
    expect(hits).toEqual([]);
    await expect(strict.fetch()(`${base}/echo`)).rejects.toBeInstanceOf(OutboundError);
  });

  it('cuts a hanging server at the deadline', async () => {
    const t0 = Date.now();
    const err = await client.request({ url: `${base}/hang`, timeoutMs: 300 }).catch((e) => e);
    expect(err).toBeInstanceOf(OutboundError);
    expect(err.kind).toBe('timeout');
    expect(err.retryable).toBe(true);
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('reports an outside abort as aborted', async () => {
    const ctl = new AbortController();
    setTimeout(() => ctl.abort(), 50);
    await expect(client.request({ url: `${base}/hang`, timeoutMs: 10_000, signal: ctl.signal })).rejects.toMatchObject({ kind: 'aborted' });
  });

  it('caps response bodies (declared and streamed)', async () => {
    await expect(client.request({ url: `${base}/big`, timeoutMs: 5000, maxBodyBytes: 1024 })).rejects.toMatchObject({ kind: 'too_large' });
    await expect(client.request({ url: `${base}/big-chunked`, timeoutMs: 5000, maxBodyBytes: 1024 })).rejects.toMatchObject({ kind: 'too_large' });
    const ok = await client.request({ url: `${base}/big`, timeoutMs: 5000, maxBodyBytes: 4096 });
    expect(ok.body.length).toBe(2048);
  });

  it('reports a refused connection as a retryable network error', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const err = await client.request({ url: `http://127.0.0.1:${port}/`, timeoutMs: 5000 }).catch((e) => e);
    expect(err).toMatchObject({ kind: 'network', retryable: true });
  });

  it('the fetch for libraries passes allowed calls and does not follow redirects', async () => {
    const res = await client.fetch()(`${base}/redirect`);
    expect(res.status).toBe(302);
  });
});
