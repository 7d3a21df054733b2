/**
 * How deeply JSON the service accepts may nest (objects and arrays; 1 = `{}`). Request bodies
 * deeper than this are 400 `invalid_request` before they are parsed (app.factory.ts), and model
 * output deeper than this is refused as the model's error: recursive code further on (validation,
 * canonical JSON, PostgreSQL's jsonb input) would otherwise run out of stack on ~5,000 levels.
 * No body of the contract needs more than a handful; tool results and outputs are free-form JSON,
 * which 64 levels leaves ample room for.
 */
export const JSON_MAX_DEPTH = 64;

const OPEN_OBJECT = 0x7b; // {
const OPEN_ARRAY = 0x5b; // [
const CLOSE_OBJECT = 0x7d; // }
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \

/**
 * True when the JSON text nests deeper than `max`. One pass over the characters, no parsing and
 * no recursion (brackets inside strings do not count); meant to run before JSON.parse, so it is
 * only exact for valid JSON (invalid JSON fails the parse anyway).
 */
export function exceedsJsonDepth(text: string, max = JSON_MAX_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > max) return true;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
  }
  return false;
}
