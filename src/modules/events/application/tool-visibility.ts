import { Inject, Injectable, Optional } from '@nestjs/common';
import { ToolRegistry, ToolVisibility } from '../../agents/domain/tool';
import { ToolVisibilityLookup } from '../domain/event-projector';

/** Tool visibility for the projector, from the tool registry; unknown tools (or no registry) are public. */
@Injectable()
export class ToolVisibilityResolver {
  constructor(@Optional() @Inject(ToolRegistry) private readonly registry?: ToolRegistry | null) {}

  readonly lookup: ToolVisibilityLookup = (name: string): ToolVisibility | undefined => {
    try {
      return this.registry?.visibilityOf(name);
    } catch {
      return undefined;
    }
  };
}
