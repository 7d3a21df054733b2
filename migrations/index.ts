import { Foundation1764489600000 } from './1764489600000-foundation';

/** Every migration, in order. The data source takes this list (no globbing: works in src, dist and tests). */
export const MIGRATIONS = [Foundation1764489600000];
