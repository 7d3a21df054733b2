/** Port: the retention of a tenant's trail (AUDIT_RETENTION_DAYS) and its legal hold. */
export abstract class AuditRetention {
  /** Puts the tenant on legal hold (no pruning) or takes it off; returns the state as stored. */
  abstract setLegalHold(tenantId: string, enabled: boolean, by: string): Promise<{ enabled: boolean; updatedAt: Date; updatedBy: string | null }>;
  /**
   * Deletes the tenant's records up to its latest signed checkpoint made before `cutoff` (which
   * becomes the start of its chain), unless it is on legal hold. Returns the records deleted.
   */
  abstract pruneTenant(tenantId: string, cutoff: Date): Promise<number>;
}
