import { envRefs } from '../../domain/tool-entries';

/**
 * Header values as configured may name secrets as `${env:NAME}`; they are resolved here, at call
 * time, and the result is only ever handed to the outbound request (never stored, logged or
 * returned). A secret that is not set is a failure that names the variable, not a value.
 */
export function resolveHeaders(headers: Record<string, string>, env: NodeJS.ProcessEnv = process.env): { headers: Record<string, string> } | { missing: string } {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) {
    for (const name of envRefs(v)) if (env[name] === undefined) return { missing: name };
    out[k] = v.replace(/\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, name: string) => env[name] ?? '');
  }
  return { headers: out };
}
