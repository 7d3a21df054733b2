/**
 * The first module main.ts loads: on a Node.js older than 22.12 the service stops here with one
 * line, before NestJS, the database drivers or anything else is loaded (their errors on an old Node
 * would say nothing about the cause). Plain code only, so that any Node parses and runs it.
 */
export const MIN_NODE_VERSION = '22.12.0';

/** Whether `version` ("v22.12.0" or "22.12.0") is at least MIN_NODE_VERSION. */
export function nodeVersionSupported(version: string): boolean {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number);
  const [minMajor, minMinor] = MIN_NODE_VERSION.split('.').map(Number);
  return major > minMajor || (major === minMajor && minor >= minMinor);
}

if (!nodeVersionSupported(process.version)) {
  process.stderr.write(
    `agent-api needs Node.js >= ${MIN_NODE_VERSION.replace(/\.0$/, '')} (this is ${process.version}): install Node 22 or 24 (see .nvmrc) and run it again\n`,
  );
  process.exit(1);
}
