import { Injectable } from '@nestjs/common';
import { UnitOfWork } from '../../../../common/database/unit-of-work';
import { DemoTicket, DemoTicketStore } from '../../domain/demo-ticket.store';

interface TicketRow {
  ticket_id: string;
  order_id: string;
  reason: string;
  tenant_id: string;
  created_at: Date;
}

/** `demo_tickets`: one insert that never overwrites, then a read. No transaction is held open. */
@Injectable()
export class DemoTicketTypeormStore extends DemoTicketStore {
  constructor(private readonly uow: UnitOfWork) {
    super();
  }

  async createOnce(idempotencyKey: string, t: DemoTicket): Promise<DemoTicket> {
    const m = this.uow.manager;
    await m.query(
      `INSERT INTO demo_tickets (idempotency_key, ticket_id, order_id, reason, tenant_id, created_at)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (idempotency_key) DO NOTHING`,
      [idempotencyKey, t.ticketId, t.orderId, t.reason, t.tenantId, t.createdAt],
    );
    const rows: TicketRow[] = await m.query(
      `SELECT ticket_id, order_id, reason, tenant_id, created_at FROM demo_tickets WHERE idempotency_key = $1`,
      [idempotencyKey],
    );
    if (rows.length !== 1) throw new Error('demo ticket vanished after insert');
    const r = rows[0];
    return { ticketId: r.ticket_id, orderId: r.order_id, reason: r.reason, tenantId: r.tenant_id, createdAt: new Date(r.created_at) };
  }
}
