import type Redis from 'ioredis';

/**
 * The open SSE streams per API key of every node, in Redis, so that SSE_MAX_PER_KEY holds for
 * the cluster and not per node. Each node owns one hash (`<prefix>sse:node:<node id>`: key
 * identity -> that node's open streams) and writes the absolute counts it holds in memory (never
 * increments), so Redis converges to the nodes' own truth whatever was lost; the hash and the
 * node's entry in the live-node set (`<prefix>sse:nodes`, scored by expiry) live `ttlMs` and
 * are renewed by a heartbeat: a node that crashed stops counting after `ttlMs`. Times are Redis's
 * own clock (no skew between nodes).
 */

/** KEYS: live-node set, own hash. ARGV: node-hash prefix, node id, key, count if admitted, max, ttl ms. */
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local total = tonumber(ARGV[4])
for _, n in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if n ~= ARGV[2] then total = total + tonumber(redis.call('HGET', ARGV[1] .. n, ARGV[3]) or '0') end
end
if total > tonumber(ARGV[5]) then return 0 end
redis.call('HSET', KEYS[2], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[6]), ARGV[2])
return 1
`;

/** KEYS: live-node set, own hash. ARGV: node id, ttl ms, then key/count pairs (the node's whole state). */
const HEARTBEAT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('DEL', KEYS[2])
if #ARGV > 2 then
  redis.call('HSET', KEYS[2], unpack(ARGV, 3))
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return 1
`;

/** KEYS: own hash. ARGV: key, the node's count now, ttl ms. */
const SET_COUNT = `
if tonumber(ARGV[2]) <= 0 then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`;

type Scripted = Redis & {
  sseAcquire(nodes: string, own: string, nodePrefix: string, nodeId: string, key: string, count: number, max: number, ttlMs: number): Promise<number>;
  sseHeartbeat(nodes: string, own: string, nodeId: string, ttlMs: number, ...pairs: Array<string | number>): Promise<number>;
  sseSetCount(own: string, key: string, count: number, ttlMs: number): Promise<number>;
};

export class SharedStreamCounts {
  private readonly redis: Scripted;
  private readonly nodesKey: string;
  private readonly nodePrefix: string;
  private readonly ownKey: string;

  constructor(
    redis: Redis,
    prefix: string,
    private readonly nodeId: string,
    readonly ttlMs: number,
  ) {
    this.redis = redis as Scripted;
    this.nodesKey = `${prefix}sse:nodes`;
    this.nodePrefix = `${prefix}sse:node:`;
    this.ownKey = this.nodePrefix + nodeId;
    if (!this.redis.sseAcquire) {
      redis.defineCommand('sseAcquire', { numberOfKeys: 2, lua: ACQUIRE });
      redis.defineCommand('sseHeartbeat', { numberOfKeys: 2, lua: HEARTBEAT });
      redis.defineCommand('sseSetCount', { numberOfKeys: 1, lua: SET_COUNT });
    }
  }

  /**
   * Admits a stream of `key` if all nodes together, with this node at `countIfAdmitted`, stay
   * within `max`; records this node's count when it does. Rejects when Redis cannot answer.
   */
  async acquire(key: string, countIfAdmitted: number, max: number): Promise<boolean> {
    return (await this.redis.sseAcquire(this.nodesKey, this.ownKey, this.nodePrefix, this.nodeId, key, countIfAdmitted, max, this.ttlMs)) === 1;
  }

  /** This node now holds `count` streams of `key`. */
  async setCount(key: string, count: number): Promise<void> {
    await this.redis.sseSetCount(this.ownKey, key, count, this.ttlMs);
  }

  /** Writes this node's whole state and renews its lease. */
  async heartbeat(counts: ReadonlyMap<string, number>): Promise<void> {
    const pairs: Array<string | number> = [];
    for (const [k, n] of counts) if (n > 0) pairs.push(k, n);
    await this.redis.sseHeartbeat(this.nodesKey, this.ownKey, this.nodeId, this.ttlMs, ...pairs);
  }

  /** This node leaves (shutdown): its counts stop at once rather than after the TTL. */
  async leave(): Promise<void> {
    await this.redis.multi().del(this.ownKey).zrem(this.nodesKey, this.nodeId).exec();
  }
}
