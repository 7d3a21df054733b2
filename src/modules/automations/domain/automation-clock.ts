import { Clock } from '../../../common/clock/clock';

/**
 * The time that decides when automations fire (CONTRACT section 17): the service's `Clock`
 * (common/clock, a FakeClock in tests that hand one in), behind a port of this module so a test
 * can move the schedulers' time alone without moving the runs' deadlines and timers with it.
 */
export abstract class AutomationClock {
  /** Epoch milliseconds. */
  abstract now(): number;

  date(): Date {
    return new Date(this.now());
  }
}

/** The service's clock, as automations read it. */
export class ServiceAutomationClock extends AutomationClock {
  constructor(private readonly clock: Clock) {
    super();
  }

  now(): number {
    return this.clock.now();
  }
}
