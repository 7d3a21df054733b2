import { SECRET_NAME_RE } from '../../../common/text/secret-name';

export { SECRET_NAME_RE };
/** A value is at most 8 KiB of UTF-8. */
export const SECRET_VALUE_MAX_BYTES = 8192;

export function isSecretName(name: string): boolean {
  return SECRET_NAME_RE.test(name);
}

/**
 * What the service shows of a tenant's secret: never its value. `version` starts at 1 and grows
 * by one with every write of the name, across deletes (a name deleted at version 3 and set again
 * is version 4), so a version names one value for good.
 */
export interface SecretMetadata {
  tenantId: string;
  name: string;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}
