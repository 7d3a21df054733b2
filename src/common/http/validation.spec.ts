import { ArgumentMetadata } from '@nestjs/common';
import { DomainError } from '../errors/domain-error';
import { CreateSessionRequestDto } from '../../modules/sessions/api/dto/create-session.request.dto';
import { CreateRunRequestDto } from '../../modules/runs/api/dto/create-run.request.dto';
import { SubmitToolOutputsRequestDto } from '../../modules/runs/api/dto/tool-outputs.request.dto';
import { UpdateSessionRequestDto } from '../../modules/sessions/api/dto/update-session.request.dto';
import { ListQueryDto } from './pagination';
import { ContractValidationPipe } from './validation';

const pipe = new ContractValidationPipe();

async function rejection(value: unknown, metatype: ArgumentMetadata['metatype'], type: ArgumentMetadata['type'] = 'body') {
  const err = await pipe.transform(value, { type, metatype }).then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(err)}`);
  expect(err.code).toBe('invalid_request');
  return { message: err.message, errors: (err.details as { errors: Array<{ field: string; message: string }> }).errors };
}

describe('ContractValidationPipe: one message per field, the most relevant rule first', () => {
  it.each([
    // A wrong type is reported as such, not as a failed pattern or length.
    [{ agent_id: 5 }, [{ field: 'agent_id', message: 'agent_id must be a string' }]],
    [{ title: 5 }, [{ field: 'title', message: 'title must be a string' }]],
    [{ title: ['a'.repeat(300)] }, [{ field: 'title', message: 'title must be a string' }]],
    // A single failure is unchanged.
    [{ title: 'x'.repeat(201) }, [{ field: 'title', message: 'title must be shorter than or equal to 200 characters' }]],
    [{ agent_id: 'Not An Id' }, [{ field: 'agent_id', message: 'agent_id must be an agent id such as support_agent' }]],
    // Several fields: one each, in order; unknown and server-owned fields still named.
    [
      { agent_id: 'X'.repeat(100), title: 7, id: 'sess_1' },
      [
        { field: 'id', message: 'id is not allowed (unknown or server-owned field)' },
        { field: 'agent_id', message: 'agent_id must be an agent id such as support_agent' },
        { field: 'title', message: 'title must be a string' },
      ],
    ],
  ])('session create %j', async (body, expected) => {
    const { message, errors } = await rejection(body, CreateSessionRequestDto);
    expect(errors).toEqual(expected);
    expect(message).toBe(expected.map((e) => e.message).join('; '));
  });

  it('null is not leaving a field out: 400 naming the field, except where the field takes null (nullable in Swagger)', async () => {
    const input = { role: 'user', content: [{ type: 'text', text: 'hi' }] };
    expect((await rejection({ default_concurrency: null }, UpdateSessionRequestDto)).errors).toEqual([
      { field: 'default_concurrency', message: expect.stringMatching(/^default_concurrency must be one of/) },
    ]);
    expect((await rejection({ metadata: null, agent: null, expected_revision: null }, UpdateSessionRequestDto)).errors.map((e) => e.field)).toEqual(['metadata', 'agent', 'expected_revision']);
    expect((await rejection({ input, limits: { max_steps: null } }, CreateRunRequestDto)).errors).toEqual([{ field: 'limits.max_steps', message: 'limits.max_steps must be an integer number' }]);
    expect((await rejection({ input: { role: 'user', content: [{ type: 'text', text: 'hi', attachment_id: true }] } }, CreateRunRequestDto)).errors.map((e) => e.field)).toEqual(['input.content[0].attachment_id']);
    await expect(pipe.transform({ title: null }, { type: 'body', metatype: UpdateSessionRequestDto })).resolves.toMatchObject({ title: null });
    await expect(pipe.transform({ input, limits: { max_total_tokens: null } }, { type: 'body', metatype: CreateRunRequestDto })).resolves.toMatchObject({ limits: { max_total_tokens: null } });
  });

  it('query parameters: limit=abc is "must be an integer", not three range messages', async () => {
    const { message, errors } = await rejection({ limit: 'abc', order: 'up' }, ListQueryDto, 'query');
    expect(errors).toEqual([
      { field: 'limit', message: 'limit must be an integer number' },
      { field: 'order', message: 'order must be one of the following values: asc, desc' },
    ]);
    expect(message).toBe('limit must be an integer number; order must be one of the following values: asc, desc');
  });

  it('nested fields are named by their full path, array items by index', async () => {
    const { errors } = await rejection(
      { input: { role: 'bot', content: 5 }, mode: 3, limits: { max_steps: 'many', timeout_ms: 10 } },
      CreateRunRequestDto,
    );
    expect(errors).toEqual([
      { field: 'input.role', message: 'input.role must be one of the following values: user' },
      { field: 'input.content', message: 'input.content must be an array' },
      { field: 'mode', message: 'mode must be one of the following values: stream, sync' },
      { field: 'limits.max_steps', message: 'limits.max_steps must be an integer number' },
      { field: 'limits.timeout_ms', message: 'limits.timeout_ms must not be less than 1000' },
    ]);
    const items = await rejection({ input: { role: 'user', content: [{ type: 'text', text: 'ok' }, { type: 'text', text: 5 }] } }, CreateRunRequestDto);
    expect(items.errors).toEqual([{ field: 'input.content[1].text', message: 'input.content[1].text must be a string' }]);
  });

  it('a missing required field says so once; custom messages keep their wording', async () => {
    expect((await rejection({}, CreateRunRequestDto)).errors).toEqual([{ field: 'input', message: 'input is required' }]);
    expect((await rejection({ tool_outputs: [{ tool_call_id: 5 }] }, SubmitToolOutputsRequestDto)).errors).toEqual([
      { field: 'tool_outputs[0].tool_call_id', message: 'tool_outputs[0].tool_call_id must be a string' },
      { field: 'tool_outputs[0].output', message: 'tool_outputs[0].output or error is required' },
    ]);
    expect((await rejection({ tool_outputs: 'x' }, SubmitToolOutputsRequestDto)).errors).toEqual([
      { field: 'tool_outputs', message: 'tool_outputs must be an array' },
    ]);
  });
});
