import { JsonSchema, validateJson } from './json-schema';

const schema: JsonSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 5, pattern: '^[a-z]+$' },
    n: { type: 'integer', minimum: 0, maximum: 10 },
    x: { type: 'number' },
    flag: { type: 'boolean' },
    kind: { type: 'string', enum: ['a', 'b'] },
    list: { type: 'array', items: { type: 'integer' }, maxItems: 2 },
  },
  required: ['name'],
  additionalProperties: false,
};

describe('validateJson', () => {
  it.each<[string, unknown, string[]]>([
    ['a valid object', { name: 'abc', n: 3, x: 1.5, flag: true, kind: 'a', list: [1, 2] }, []],
    ['not an object', 'x', ['arguments: must be an object, got string']],
    ['null', null, ['arguments: must be an object, got null']],
    ['an array', [], ['arguments: must be an object, got array']],
    ['a missing required key', {}, ['arguments.name: is required']],
    ['an unknown key', { name: 'a', extra: 1 }, ['arguments.extra: is not an allowed property']],
    ['a wrong type', { name: 5 }, ['arguments.name: must be a string, got number']],
    ['too long', { name: 'abcdef' }, ['arguments.name: must have at most 5 characters']],
    ['too short', { name: '' }, ['arguments.name: must have at least 1 characters', 'arguments.name: must match ^[a-z]+$']],
    ['a pattern mismatch', { name: 'AB' }, ['arguments.name: must match ^[a-z]+$']],
    ['a non-integer', { name: 'a', n: 1.5 }, ['arguments.n: must be an integer']],
    ['below minimum', { name: 'a', n: -1 }, ['arguments.n: must be >= 0']],
    ['above maximum', { name: 'a', n: 11 }, ['arguments.n: must be <= 10']],
    ['NaN-like string number', { name: 'a', x: '1' }, ['arguments.x: must be a number, got string']],
    ['a non-boolean', { name: 'a', flag: 'yes' }, ['arguments.flag: must be a boolean, got string']],
    ['outside the enum', { name: 'a', kind: 'c' }, ['arguments.kind: must be one of "a", "b"']],
    ['too many items', { name: 'a', list: [1, 2, 3] }, ['arguments.list: must have at most 2 items']],
    ['a bad item', { name: 'a', list: [1, 'x'] }, ['arguments.list[1]: must be an integer, got string']],
  ])('%s', (_label, value, problems) => {
    expect(validateJson(schema, value)).toEqual(problems);
  });
});
