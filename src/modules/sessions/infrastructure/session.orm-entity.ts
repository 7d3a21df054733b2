import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity('sessions')
export class SessionOrmEntity {
  @PrimaryColumn('text') id!: string;
  @Column('text', { name: 'tenant_id' }) tenantId!: string;
  @Column('text', { name: 'subject_id' }) subjectId!: string;
  @Column('text', { name: 'agent_id' }) agentId!: string;
  @Column('text', { name: 'agent_version' }) agentVersion!: string;
  @Column('text', { name: 'agent_model' }) agentModel!: string;
  @Column('text', { nullable: true }) title!: string | null;
  @Column('text') status!: 'active' | 'archived';
  @Column('integer') revision!: number;
  @Column('text', { name: 'active_run_id', nullable: true }) activeRunId!: string | null;
  @Column('jsonb') metadata!: Record<string, string>;
  @Column('text', { name: 'default_concurrency' }) defaultConcurrency!: 'reject' | 'enqueue' | 'steer' | 'interrupt';
  @Column('integer', { name: 'message_seq' }) messageSeq!: number;
  @Column({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'updated_at' }) updatedAt!: Date;
  @Column({ type: 'timestamptz', name: 'last_active_at' }) lastActiveAt!: Date;
  /** Session TTL (CONTRACT 17): `expires_at` is derived, `last_active_at + ttl_seconds`; the old `expires_at` column is unused. */
  @Column('integer', { name: 'ttl_seconds', nullable: true }) ttlSeconds!: number | null;
  @Column('text', { name: 'ttl_strategy', nullable: true }) ttlStrategy!: 'archive' | 'delete' | null;
  /** A subagent (CONTRACT 16): the session and run that created it, its name and status. */
  @Column('text', { name: 'parent_session_id', nullable: true }) parentSessionId!: string | null;
  @Column('text', { name: 'parent_run_id', nullable: true }) parentRunId!: string | null;
  @Column('text', { name: 'subagent_name', nullable: true }) subagentName!: string | null;
  @Column('text', { name: 'subagent_status', nullable: true }) subagentStatus!: 'active' | 'closed' | null;
}
