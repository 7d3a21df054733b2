/**
 * A client tool's output as a protocol carries it (JSON text, or any value) as the native run
 * takes it: JSON text becomes its value, other text stays text, a value stays as it is.
 */
export function nativeToolOutput(output: unknown): unknown {
  if (typeof output !== 'string') return output;
  try {
    return JSON.parse(output);
  } catch {
    return output;
  }
}
