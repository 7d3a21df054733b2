/**
 * The contract error `code` a response carries, noted where the envelope is written (the global
 * filter, a replayed stored error), so that the request log line and the metrics can name it
 * without parsing bodies.
 */
const codes = new WeakMap<object, string>();

export function noteErrorCode(reply: object, code: string): void {
  codes.set(reply, code);
}

export function errorCodeOf(reply: object): string | undefined {
  return codes.get(reply);
}

/** The code of a stored error envelope (a JSON body), if it is one. */
export function errorCodeInBody(body: string | null): string | undefined {
  if (body === null) return undefined;
  try {
    const code = (JSON.parse(body) as { error?: { code?: unknown } })?.error?.code;
    return typeof code === 'string' ? code : undefined;
  } catch {
    return undefined;
  }
}
