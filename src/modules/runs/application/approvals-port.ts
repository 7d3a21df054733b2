import { Injectable, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { ApprovalGate } from '../domain/approval-gate';

/**
 * The application's ApprovalGate, if a module implements it (approvals does): runs declares the
 * port and never imports its implementer, so it looks the implementation up in the application
 * once every provider exists. None: `risk: approve` calls fail ("approvals are not available").
 */
@Injectable()
export class ApprovalsPort implements OnModuleInit {
  private found: ApprovalGate | null = null;

  constructor(private readonly ref: ModuleRef) {}

  onModuleInit(): void {
    try {
      this.found = this.ref.get(ApprovalGate, { strict: false });
    } catch {
      this.found = null;
    }
  }

  get available(): boolean {
    return this.found !== null;
  }

  get gate(): ApprovalGate | null {
    return this.found;
  }
}
