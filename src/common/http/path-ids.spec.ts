import { DomainError } from '../errors/domain-error';
import { malformedPathId } from './path-ids';

const ULID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';

describe('malformedPathId: one rule for ids in a path', () => {
  it.each(['crm_token', '1TOKEN', 'HAS-DASH', `A${'B'.repeat(64)}`, 'A\u0000'])('a secret name the client chose, %j, is 400 naming the field (not a 404)', (name) => {
    const err = malformedPathId('/v1/secrets/:name', { name });
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({ code: 'invalid_request', details: { errors: [{ field: 'name', message: expect.stringContaining('[A-Z][A-Z0-9_]{0,63}') }] } });
  });

  it.each([
    ['/v1/sessions/:id', { id: `sess_${ULID}` }],
    ['/v1/sessions/:id/messages/:message_id', { id: `sess_${ULID}`, message_id: `msg_${ULID}` }],
    ['/v1/runs/:id/approvals/:approval_id', { id: `run_${ULID}`, approval_id: `apr_${ULID}` }],
    ['/v1/attachments/:id/content', { id: 'att_0190a5e8-4f2b-7c3d-8e4f-a1b2c3d4e5f6' }],
    ['/v1/agents/:id', { id: 'support_agent' }],
    ['/v1/secrets/:name', { name: 'CRM_API_TOKEN' }],
  ])('%s with well-formed ids passes', (route, params) => {
    expect(malformedPathId(route, params)).toBeNull();
  });

  it.each([
    ['/v1/sessions/:id', { id: 'sess_\u0000abc' }, 'session_not_found', { session_id: 'sess_\u0000abc' }],
    ['/v1/sessions/:id', { id: `run_${ULID}` }, 'session_not_found', { session_id: `run_${ULID}` }],
    ['/v1/sessions/:id', { id: `sess_${ULID.toLowerCase()}` }, 'session_not_found', { session_id: `sess_${ULID.toLowerCase()}` }],
    ['/v1/sessions/:id/messages/:message_id', { id: `sess_${ULID}`, message_id: '\ud800' }, 'message_not_found', { message_id: '\ud800' }],
    ['/v1/runs/:id/approvals/:approval_id', { id: "run_' OR 1=1", approval_id: `apr_${ULID}` }, 'run_not_found', { run_id: "run_' OR 1=1" }],
    ['/v1/attachments/:id', { id: 'att_x' }, 'attachment_not_found', { attachment_id: 'att_x' }],
    ['/v1/agents/:id', { id: 'Support Agent' }, 'agent_not_found', { agent_id: 'Support Agent' }],
  ])('%s with %j is its resource 404', (route, params, code, details) => {
    const err = malformedPathId(route, params);
    expect(err).toBeInstanceOf(DomainError);
    expect(err).toMatchObject({ code, details });
  });
});
