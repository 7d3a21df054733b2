export * from './client';
export * from './sse';
export type { components, paths } from './schema';
