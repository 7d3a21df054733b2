import { Foundation1764489600000 } from './1764489600000-foundation';
import { RunsMessages1764489700000 } from './1764489700000-runs-messages';
import { Events1764489800000 } from './1764489800000-events';
import { DemoTickets1764489900000 } from './1764489900000-demo-tickets';
import { Attachments1764490000000 } from './1764490000000-attachments';
import { Audit1764490100000 } from './1764490100000-audit';
import { Approvals1764490200000 } from './1764490200000-approvals';
import { AuditOutbox1764497000000 } from './1764497000000-audit-outbox';
import { DropSessionEventSeq1764497100000 } from './1764497100000-drop-session-event-seq';
import { AuditRunEventsTrigger1764497200000 } from './1764497200000-audit-run-events-trigger';
import { UnitOfWorkAbort1764497300000 } from './1764497300000-unit-of-work-abort';
import { AuditKeyedChain1764497400000 } from './1764497400000-audit-keyed-chain';
import { Steering1764497650000 } from './1764497650000-steering';
import { ApiAgents1764497700000 } from './1764497700000-api-agents';
import { IntegrationEvents1764497750000 } from './1764497750000-integration-events';
import { Webhooks1764497800000 } from './1764497800000-webhooks';
import { SecretsOutOfIdempotency1764497900000 } from './1764497900000-secrets-out-of-idempotency';
import { WebhookIsolation1764498000000 } from './1764498000000-webhook-isolation';
import { Secrets1764498100000 } from './1764498100000-secrets';
import { ModelSpend1764498400000 } from './1764498400000-model-spend';
import { PartitionRunEvents1764498500000 } from './1764498500000-partition-run-events';
import { AuditCheckpoints1764498600000 } from './1764498600000-audit-checkpoints';
import { SteerByDefault1764498710000 } from './1764498710000-steer-by-default';
import { InputReceipts1764498711000 } from './1764498711000-input-receipts';
import { RunPauses1764498720000 } from './1764498720000-run-pauses';
import { Automations1764498730000 } from './1764498730000-automations';
import { Subagents1764498740000 } from './1764498740000-subagents';
import { SubagentApprovals1764498770000 } from './1764498770000-subagent-approvals';
import { SpendReservations1796650228314 } from './1796650228314-spend-reservations';
import { RunEventsPageFunctions1764498800000 } from './1764498800000-run-events-page-functions';
import { RunSecretUses1796650086114 } from './1796650086114-run-secret-uses';
/**
 * Every migration, in order. The data source takes this list (no globbing: works in src, dist and tests).
 * Add one import and one entry per migration; keep timestamps increasing.
 */
export const MIGRATIONS = [
  Foundation1764489600000,
  RunsMessages1764489700000,
  Events1764489800000,
  DemoTickets1764489900000,
  Attachments1764490000000,
  Audit1764490100000,
  Approvals1764490200000,
  AuditOutbox1764497000000,
  DropSessionEventSeq1764497100000,
  AuditRunEventsTrigger1764497200000,
  UnitOfWorkAbort1764497300000,
  AuditKeyedChain1764497400000,
  Steering1764497650000,
  ApiAgents1764497700000,
  IntegrationEvents1764497750000,
  Webhooks1764497800000,
  SecretsOutOfIdempotency1764497900000,
  WebhookIsolation1764498000000,
  Secrets1764498100000,
  ModelSpend1764498400000,
  PartitionRunEvents1764498500000,
  AuditCheckpoints1764498600000,
  SteerByDefault1764498710000,
  InputReceipts1764498711000,
  RunPauses1764498720000,
  Automations1764498730000,
  Subagents1764498740000,
  SubagentApprovals1764498770000,
  RunEventsPageFunctions1764498800000,
  RunSecretUses1796650086114,
  SpendReservations1796650228314,
];
