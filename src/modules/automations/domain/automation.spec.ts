import { assertSchedule, cronProblem, dueSlots, isTimeZone, nextSlot } from './automation';

const cron = (expression: string, timezone = 'UTC') => ({ type: 'cron' as const, expression, timezone });
const d = (iso: string) => new Date(iso);

describe('automation schedules (croner, IANA time zones)', () => {
  it.each([
    ['09:00 Berlin in summer is 07:00 UTC', cron('0 9 * * *', 'Europe/Berlin'), '2026-06-01T12:00:00Z', '2026-06-02T07:00:00.000Z'],
    ['09:00 Berlin in winter is 08:00 UTC', cron('0 9 * * *', 'Europe/Berlin'), '2026-12-01T12:00:00Z', '2026-12-02T08:00:00.000Z'],
    ['strictly after: a slot equal to "after" is not next', cron('* * * * *'), '2026-06-01T10:01:00.000Z', '2026-06-01T10:02:00.000Z'],
    ['weekdays only: Friday evening -> Monday', cron('0 9 * * 1-5', 'America/New_York'), '2026-06-05T20:00:00Z', '2026-06-08T13:00:00.000Z'],
    // DST gap: 02:30 does not exist in Berlin on 2026-03-29; croner fires at the first minute after the gap (03:30 CEST = 01:30 UTC).
    ['spring-forward gap fires after the gap', cron('30 2 * * *', 'Europe/Berlin'), '2026-03-28T12:00:00Z', '2026-03-29T01:30:00.000Z'],
    // DST repeat: 02:30 occurs twice in Berlin on 2026-10-25; it fires once, at the first one (CEST, 00:30 UTC).
    ['fall-back repeat fires at the first occurrence', cron('30 2 * * *', 'Europe/Berlin'), '2026-10-24T12:00:00Z', '2026-10-25T00:30:00.000Z'],
  ])('%s', (_name, schedule, after, expected) => {
    expect(nextSlot(schedule, d(after))?.toISOString()).toBe(expected);
  });

  it('the fall-back repeat fires only once that night', () => {
    const first = nextSlot(cron('30 2 * * *', 'Europe/Berlin'), d('2026-10-24T12:00:00Z'))!;
    expect(nextSlot(cron('30 2 * * *', 'Europe/Berlin'), first)?.toISOString()).toBe('2026-10-26T01:30:00.000Z');
  });

  it('one-time: its time if still ahead, else none', () => {
    const once = { type: 'once' as const, at: d('2026-06-01T10:00:00Z') };
    expect(nextSlot(once, d('2026-06-01T09:00:00Z'))?.toISOString()).toBe('2026-06-01T10:00:00.000Z');
    expect(nextSlot(once, d('2026-06-01T10:00:00Z'))).toBeNull();
  });

  it('accepts five-field cron and IANA zones only', () => {
    expect(cronProblem('*/5 * * * *')).toBeNull();
    expect(cronProblem('0 0 * * * *')).toMatch(/five-field/);
    expect(cronProblem('61 * * * *')).toMatch(/not a valid cron/);
    expect(isTimeZone('Asia/Kolkata')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
    const fields = { expression: 'e', timezone: 'z', at: 'a' };
    expect(() => assertSchedule({ type: 'once', at: d('2026-01-01T00:00:00Z') }, d('2026-01-01T00:00:00Z'), fields)).toThrow(/a must be in the future/);
  });

  it.each([['0 0 31 2 *'], ['0 0 30 2 *'], ['0 12 31 4,6,9,11 *']])('a valid cron that matches no date (%s) is refused: it would never fire', (expression) => {
    const fields = { expression: 'e', timezone: 'z', at: 'a' };
    expect(cronProblem(expression)).toBeNull();
    expect(() => assertSchedule(cron(expression), d('2026-01-01T00:00:00Z'), fields)).toThrow(/e never fires/);
    // February 29th does come (2028): accepted.
    expect(() => assertSchedule(cron('0 0 29 2 *'), d('2026-01-01T00:00:00Z'), fields)).not.toThrow();
  });
});

describe('dueSlots (catch-up rule)', () => {
  const every = cron('* * * * *');
  const catchup = 3_600_000;

  it('the due slot fires and the next one follows', () => {
    expect(dueSlots(every, d('2026-06-01T10:01:00Z'), d('2026-06-01T10:01:00.200Z'), catchup)).toEqual({
      fire: d('2026-06-01T10:01:00Z'),
      skip: null,
      missedBefore: null,
      next: d('2026-06-01T10:02:00Z'),
    });
  });

  it('after a downtime, only the newest slot fires; the older ones are one skipped record', () => {
    const out = dueSlots(every, d('2026-06-01T10:01:00Z'), d('2026-06-01T10:05:30Z'), catchup);
    expect(out).toEqual({ fire: d('2026-06-01T10:05:00Z'), skip: null, missedBefore: { slot: d('2026-06-01T10:01:00Z'), count: 4 }, next: d('2026-06-01T10:06:00Z') });
  });

  it('a newest slot older than the catch-up window is skipped, not fired', () => {
    const daily = cron('0 9 * * *');
    const out = dueSlots(daily, d('2026-06-01T09:00:00Z'), d('2026-06-01T11:00:00Z'), catchup);
    expect(out).toEqual({ fire: null, skip: d('2026-06-01T09:00:00Z'), missedBefore: null, next: d('2026-06-02T09:00:00Z') });
  });

  it('far too many missed slots are not walked one by one: it jumps to the newest (a minute cron down for 30 days)', () => {
    // count: null says it jumped after MISSED_COUNTED slots instead of counting all ~43,000 (no
    // wall-clock assertion: unit tests are not timed; it took 4.5 s under load with one).
    const out = dueSlots(every, d('2026-05-01T10:01:00Z'), d('2026-05-31T10:05:30Z'), catchup);
    expect(out).toEqual({ fire: d('2026-05-31T10:05:00Z'), skip: null, missedBefore: { slot: d('2026-05-01T10:01:00Z'), count: null }, next: d('2026-05-31T10:06:00Z') });
  });

  it('a one-time automation has no next slot', () => {
    const once = { type: 'once' as const, at: d('2026-06-01T10:00:00Z') };
    expect(dueSlots(once, once.at, d('2026-06-01T10:00:01Z'), catchup)).toEqual({ fire: once.at, skip: null, missedBefore: null, next: null });
  });
});
