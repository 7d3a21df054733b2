import { Writable } from 'node:stream';
import { withLogContext } from './log-context';
import { createRootLogger, PinoNestLogger } from './logger';

function capture(level: Parameters<typeof createRootLogger>[0] = 'info') {
  const lines: any[] = [];
  const dest = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      cb();
    },
  });
  const root = createRootLogger(level, { node_id: 'n1' }, dest);
  return { lines, logger: new PinoNestLogger(root), root };
}

describe('PinoNestLogger', () => {
  it('writes one JSON line with level, context and the ambient request and run ids', () => {
    const { lines, logger } = capture();
    withLogContext({ requestId: 'req_1' }, () => withLogContext({ runId: 'run_9' }, () => logger.log('hello', 'RunWorker')));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'info', msg: 'hello', context: 'RunWorker', req_id: 'req_1', run_id: 'run_9', node_id: 'n1' });
    expect(typeof lines[0].time).toBe('string');
  });

  it('separates the stack from the context on errors, and honours the level', () => {
    const { lines, logger } = capture('warn');
    logger.log('dropped', 'X');
    logger.debug('dropped', 'X');
    logger.error('boom', 'Error: boom\n    at f (a.js:1:1)', 'Errors');
    logger.error('only stack', 'Error: x\n    at g (b.js:1:1)');
    logger.warn({ msg: 'structured', attempt: 2 }, 'Worker');
    expect(lines.map((l) => l.msg)).toEqual(['boom', 'only stack', 'structured']);
    expect(lines[0]).toMatchObject({ level: 'error', context: 'Errors', stack: expect.stringContaining('at f') });
    expect(lines[1].context).toBeUndefined();
    expect(lines[1].stack).toContain('at g');
    expect(lines[2]).toMatchObject({ level: 'warn', context: 'Worker', attempt: 2 });
  });

  it("leaves out Nest's error lines for errors it throws to the caller too (a provider failing at creation, listen failing)", () => {
    const { lines, logger } = capture('info');
    logger.error(new Error('MODELS_FILE /x.json: ENOENT'), 'ExceptionHandler');
    logger.error('Error: listen EADDRINUSE: address already in use 127.0.0.1:3000', 'NestApplication');
    logger.error('kept', 'Error: kept\n    at f (a.js:1:1)', 'ExceptionsHandler');
    expect(lines.map((l) => [l.context, l.msg])).toEqual([['ExceptionsHandler', 'kept']]);
  });

  it("writes Nest's and Fastify's start-up chatter at debug, so info starts quietly", () => {
    const { lines, logger, root } = capture('info');
    logger.log('AppModule dependencies initialized', 'InstanceLoader');
    logger.log('Mapped {/healthz, GET} route', 'RouterExplorer');
    logger.log('Nest application successfully started', 'NestApplication');
    root.info('Server listening at http://127.0.0.1:3000');
    logger.log('Agent API listening on http://127.0.0.1:3000', 'Bootstrap');
    expect(lines.map((l) => l.msg)).toEqual(['Agent API listening on http://127.0.0.1:3000']);

    const debug = capture('debug');
    debug.logger.log('Mapped {/healthz, GET} route', 'RouterExplorer');
    debug.root.info('Server listening at http://127.0.0.1:3000');
    expect(debug.lines.map((l) => [l.level, l.msg])).toEqual([
      ['debug', 'Mapped {/healthz, GET} route'],
      ['debug', 'Server listening at http://127.0.0.1:3000'],
    ]);
  });

  it('never writes authorization headers or bodies', () => {
    const { lines, root } = capture();
    root.info({ req: { headers: { authorization: 'Bearer secret-key-1' }, body: { password: 'p' } } }, 'x');
    const text = JSON.stringify(lines);
    expect(text).not.toContain('secret-key-1');
    expect(text).not.toContain('"password"');
  });
});
