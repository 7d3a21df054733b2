import { UnitOfWork } from '../../../common/database/unit-of-work';
import { AuditTrail } from '../domain/audit-trail';
import { AuditRow } from './audit-row';
import { AuditTypeormReader } from './audit.typeorm-reader';

const row = (seq: number): AuditRow => ({
  id: `aud_${seq}`,
  tenant_id: 't',
  seq: String(seq),
  occurred_at: new Date(1_700_000_000_000),
  actor_subject_id: 'u',
  actor_role: 'member',
  actor_key_id: 'k',
  action: 'POST /v1/sessions',
  resource_type: 'session',
  resource_id: 'sess_1',
  session_id: 'sess_1',
  run_id: null,
  request_id: 'req_1',
  outcome: 'ok',
  status: 201,
  data: { seq },
  prev_hash: 'p'.repeat(64),
  hash: 'h'.repeat(64),
  mac: null,
});

describe('AuditTypeormReader.readChain', () => {
  it("maps the rows and empties the driver's result array, so a promoted driver result cannot keep them alive (bench/README.md, session 9)", async () => {
    const driverRows = [row(1), row(2), row(3)];
    const uow = { manager: { query: async () => driverRows } } as unknown as UnitOfWork;
    const reader = new AuditTypeormReader(uow, {} as AuditTrail);
    const records = await reader.readChain('t', 0, 3, 10);
    expect(records.map((r) => [r.seq, r.data])).toEqual([
      [1, { seq: 1 }],
      [2, { seq: 2 }],
      [3, { seq: 3 }],
    ]);
    expect(driverRows).toHaveLength(0);
  });
});
