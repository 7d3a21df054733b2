import { Role } from '../config/app-config';

/** Who is calling: resolved from the API key by the auth guard. */
export interface Principal {
  tenantId: string;
  subjectId: string;
  role: Role;
  keyId: string;
}

export function isAdmin(p: Principal): boolean {
  return p.role === 'admin';
}

/**
 * Ownership rule of CONTRACT section 1: an admin sees its tenant's resources, a member only the
 * ones it created. Anything else must answer exactly like a missing id (404).
 */
export function canSee(p: Principal, owner: { tenantId: string; subjectId: string }): boolean {
  if (owner.tenantId !== p.tenantId) return false;
  return p.role === 'admin' || owner.subjectId === p.subjectId;
}
