import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Injectable, Logger } from '@nestjs/common';
import { AppConfig } from '../../../common/config/app-config';
import { AgentCatalog, AgentDefinition } from '../domain/agent-definition';
import { ModelCatalog } from '../domain/model-catalog';

const FILE_RE = /^([a-z0-9_-]+)\.v(\d+)\.json$/;

function parseDefinition(file: string, raw: unknown): AgentDefinition {
  const d = raw as Partial<AgentDefinition>;
  const problems: string[] = [];
  if (typeof d.id !== 'string' || !/^[a-z0-9_-]{1,64}$/.test(d.id)) problems.push('id');
  if (typeof d.version !== 'string' || !/^\d+$/.test(d.version)) problems.push('version');
  if (typeof d.model !== 'string' || !d.model) problems.push('model');
  // Entries are checked in full (built-in names, http/mcp/function objects) by the agents module at start-up.
  if (!Array.isArray(d.tools) || d.tools.some((t) => typeof t !== 'string' && (t === null || typeof t !== 'object'))) problems.push('tools');
  if (d.handoffs !== undefined && (!Array.isArray(d.handoffs) || d.handoffs.some((h) => typeof h !== 'string' || h === d.id))) problems.push('handoffs');
  if (problems.length) throw new Error(`agent definition ${file}: invalid ${problems.join(', ')}`);
  return {
    id: d.id!,
    version: d.version!,
    description: typeof d.description === 'string' ? d.description : '',
    model: d.model!,
    instructions: typeof d.instructions === 'string' ? d.instructions : '',
    tools: structuredClone(d.tools!),
    ...(d.handoffs?.length ? { handoffs: [...d.handoffs] } : {}),
    ...(d.subagents ? { subagents: structuredClone(d.subagents) } : {}),
  };
}

/** Reads every `agents/<id>.v<version>.json` once at start-up. */
@Injectable()
export class FileAgentCatalog extends AgentCatalog {
  private readonly logger = new Logger('Agents');
  private readonly versions = new Map<string, AgentDefinition[]>();
  private readonly models: string[];

  constructor(
    config: AppConfig,
    private readonly registry: ModelCatalog,
  ) {
    super();
    const dir = JSON.stringify(config.agentsDir);
    let files: string[];
    try {
      files = readdirSync(config.agentsDir).sort();
    } catch (err) {
      throw new Error(`AGENTS_DIR=${dir}: must be a readable folder of agent definitions (<id>.v<version>.json): ${(err as Error).message}`);
    }
    for (const file of files) {
      const m = FILE_RE.exec(file);
      if (!m) continue;
      const def = parseDefinition(file, JSON.parse(readFileSync(join(config.agentsDir, file), 'utf8')));
      if (def.id !== m[1] || def.version !== m[2]) throw new Error(`agent definition ${file}: id/version do not match the file name`);
      const list = this.versions.get(def.id) ?? [];
      list.push(def);
      list.sort((a, b) => Number(a.version) - Number(b.version));
      this.versions.set(def.id, list);
    }
    for (const list of this.versions.values()) {
      for (const d of list) for (const h of d.handoffs ?? []) if (!this.versions.has(h)) throw new Error(`agent definition ${d.id}.v${d.version}.json: handoff to "${h}", which is not a file agent`);
    }
    if (this.versions.size === 0) throw new Error(`AGENTS_DIR=${dir}: holds no agent definitions (<id>.v<version>.json)`);
    if (!this.versions.has(config.agentDefaultId)) {
      throw new Error(`AGENT_DEFAULT_ID=${JSON.stringify(config.agentDefaultId)}: must be one of the file agents: ${[...this.versions.keys()].sort().join(', ')}`);
    }
    this.models = this.registry.list().map((m) => m.id);
    this.logger.debug(`agents: ${[...this.versions.keys()].join(', ')}; models: ${this.models.join(', ')}`);
  }

  list(): AgentDefinition[] {
    return [...this.versions.values()].map((v) => v[v.length - 1]).sort((a, b) => a.id.localeCompare(b.id));
  }

  get(id: string, version?: string): AgentDefinition | null {
    const list = this.versions.get(id);
    if (!list) return null;
    if (version === undefined) return list[list.length - 1];
    return list.find((d) => d.version === version) ?? null;
  }

  knownModels(): string[] {
    return [...this.models];
  }
}
