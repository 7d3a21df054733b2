import { monotonicFactory } from 'ulid';

/** Resource id prefixes of the public contract. */
export type IdPrefix = 'sess' | 'run' | 'msg' | 'att' | 'apr' | 'call' | 'evt' | 'req' | 'aud' | 'key' | 'idem';

const nextUlid = monotonicFactory();

/** A new opaque, non-guessable, time-ordered id such as `sess_01JD...`. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${nextUlid()}`;
}

const ID_PATTERN = /^[a-z]{2,5}_[0-9A-HJKMNP-TV-Z]{26}$/;

/** True when `value` has the shape of an id with the given prefix (it may still not exist). */
export function isId(value: unknown, prefix: IdPrefix): value is string {
  return typeof value === 'string' && value.startsWith(`${prefix}_`) && ID_PATTERN.test(value);
}
