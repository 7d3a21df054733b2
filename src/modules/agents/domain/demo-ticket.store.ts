/** A support ticket of the demo `create_ticket` tool. */
export interface DemoTicket {
  ticketId: string;
  orderId: string;
  reason: string;
  tenantId: string;
  createdAt: Date;
}

/** Port: where `create_ticket` keeps its tickets, keyed by the tool call's side-effect key. */
export abstract class DemoTicketStore {
  /**
   * Creates the ticket for `idempotencyKey`, or returns the one created earlier with that key
   * (whatever the other fields): the same key always yields the same ticket.
   */
  abstract createOnce(idempotencyKey: string, ticket: DemoTicket): Promise<DemoTicket>;
}
