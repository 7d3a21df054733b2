import { nodeVersionSupported } from './node-version';

describe('nodeVersionSupported (Node >= 22.12)', () => {
  it.each([
    ['v22.12.0', true],
    ['v22.23.3', true],
    ['v23.0.0', true],
    ['v24.21.0', true],
    ['v22.11.9', false],
    ['v20.20.2', false],
    ['v18.20.0', false],
  ])('%s -> %s', (version, ok) => {
    expect(nodeVersionSupported(version)).toBe(ok);
  });
});
