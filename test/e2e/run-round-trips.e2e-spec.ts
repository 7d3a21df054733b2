import { Query } from 'pg';
import { DataSource } from 'typeorm';
import { createSession, runEvents, script, startRun, userInput } from '../helpers/runs';
import { KEYS, startTestApp, TestApp } from '../helpers/test-app';

/**
 * Issue 29, item 4: the database work of one run is counted, so that a change that writes more
 * fails `npm test` instead of showing up weeks later as a slower B1. Every statement the service
 * sends is submitted by a `pg` `Query` (both databases: the embedded one is served
 * over the wire protocol too); a statement or transaction is the run's when one of its statements
 * carries the run's id (its parameters or its text). Statements that name no run (the claim
 * `... WHERE id IN (SELECT ... SKIP LOCKED)`, pollers) are not counted: the figures are an upper
 * bound on what one run costs, not the whole service's traffic.
 *
 * B1's shape: a `get_time` tool call, then a 200-character answer in 4-character chunks.
 * Limits are today's figures: lower them when a change saves a round trip, never raise them
 * without a measurement (bench B1W) in the commit that does.
 */
const LIMITS = {
  /**
   * Statements naming the run, from the creating POST to run.finished (today: the creating
   * commit, 4 guarded run statements, the history read; the ending one also moves the session
   * to its next run, without a transaction: RunRepository.saveEnding).
   */
  statements: 6,
  /** Commits that wrote something of the run (today: the creating commit and the 4 guarded statements). */
  commits: 5,
};
/**
 * The audit trail's chain inserts are batched across runs and tenants by the audit drain (1-3 of
 * them name a lone run's session, depending on when the drain wakes): reported, not limited.
 */
const AUDIT_INSERT = /^INSERT INTO audit_records/i;

interface Tally {
  statements: number;
  commits: number;
  texts: string[];
  auditInserts: number;
}

/** The test's own statements carry this comment and are not counted. */
const WATCHER = '/* round-trip watcher */';

/** What pg's Query has when it is submitted (its config). */
interface SubmittedQuery {
  text?: string;
  values?: unknown[];
  submit(connection: object): unknown;
}

/** Counts from now on what names one of `ids()`; returns the tally and a function that stops counting. */
function countRunQueries(ids: () => string[]): { tally: Tally; stop: () => void } {
  const tally: Tally = { statements: 0, commits: 0, texts: [], auditInserts: 0 };
  // Every statement of every client (pooled, prepared, simple) is submitted through here, once.
  const proto = Query.prototype as unknown as SubmittedQuery;
  const original = proto.submit;
  const tx = new WeakMap<object, { names: boolean }>();
  proto.submit = function (this: SubmittedQuery, connection: object) {
    const text = (this.text ?? '').trim();
    const values = this.values ?? [];
    const named = ids();
    const names = (v: unknown): boolean => named.includes(v as string) || (Array.isArray(v) && v.some((x) => named.includes(x)));
    if (AUDIT_INSERT.test(text)) {
      if (values.some(names)) tally.auditInserts++;
    } else if (!text.startsWith(WATCHER)) {
      const head = text.slice(0, 20).toUpperCase();
      if (head.startsWith('START TRANSACTION') || head.startsWith('BEGIN')) tx.set(connection, { names: false });
      else if (head.startsWith('COMMIT')) {
        if (tx.get(connection)?.names) tally.commits++;
        tx.delete(connection);
      } else if (head.startsWith('ROLLBACK') && !head.startsWith('ROLLBACK TO')) tx.delete(connection);
      else if (values.some(names) || named.some((id) => text.includes(id))) {
        tally.statements++;
        tally.texts.push(text.replace(/\s+/g, ' ').slice(0, 100));
        const open = tx.get(connection);
        if (open) open.names = true;
        else if (!/^(SELECT|WITH [a-z_]+ AS \(SELECT)/i.test(text)) tally.commits++; // a write outside a transaction commits by itself
      }
    }
    return original.call(this, connection);
  };
  return { tally, stop: () => (proto.submit = original) };
}

describe('database round trips of one run (issue 29)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it(`a run with one tool call and a 50-chunk answer makes at most ${LIMITS.statements} statements and ${LIMITS.commits} commits`, async () => {
    const key = KEYS.memberA1;
    const sid = await createSession(t, key, { agent_id: 'assistant' });
    // What names the session or (once the POST has answered) the run: the creating commit carries
    // both ids, the run's statements the run's, the session's updates at its end the session's.
    const ids = [sid];
    // The test watches the run with its own marked statement, not counted (the API's reads would be).
    const db = t.app.get(DataSource);
    const { tally, stop } = countRunQueries(() => ids);
    let runId = '';
    try {
      const text = 'x'.repeat(200);
      const r = await startRun(t, key, sid, {
        input: userInput(script([{ tool_calls: [{ name: 'get_time', arguments: {} }] }, { text, chunk_size: 4, delay_ms: 0 }])),
      });
      expect(r.status).toBe(202);
      runId = r.body.run_id;
      ids.push(runId);
      const until = Date.now() + 20_000;
      for (;;) {
        const rows: Array<{ status: string }> = await db.query(`${WATCHER} SELECT status FROM runs WHERE id = $1`, [runId]);
        if (rows[0]?.status === 'completed') break;
        if (Date.now() > until) throw new Error(`run ${runId} did not complete: ${rows[0]?.status}`);
        await new Promise((res) => setTimeout(res, 20));
      }
      // Writes after the run's end (the session's release, the audit drain) have landed.
      await new Promise((res) => setTimeout(res, 300));
    } finally {
      stop();
    }
    // The run really did the work counted: a tool call and the whole answer.
    const events = (await runEvents(t, key, runId)) as Array<{ type: string; data: any }>;
    expect(events.filter((e) => e.type === 'tool.completed')).toHaveLength(1);
    const answer = events.filter((e) => e.type === 'message.completed').pop();
    expect(answer?.data.content).toEqual([{ type: 'text', text: 'x'.repeat(200) }]);

    const report = `${tally.statements} statements, ${tally.commits} commits (and ${tally.auditInserts} audit chain inserts):\n  ${tally.texts.join('\n  ')}`;
    // Counting works at all (a broken hook would pass any ceiling).
    expect(tally.statements).toBeGreaterThanOrEqual(4);
    expect(tally.commits).toBeGreaterThanOrEqual(3);
    if (tally.statements > LIMITS.statements || tally.commits > LIMITS.commits) throw new Error(`over the limits (${LIMITS.statements} statements, ${LIMITS.commits} commits): ${report}`);
    // eslint-disable-next-line no-console
    console.log(`run round trips: ${report}`);
  });
});
