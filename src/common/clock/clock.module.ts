import { DynamicModule, Global, Module } from '@nestjs/common';
import { Clock, SystemClock } from './clock';

/** Makes the `Clock` injectable everywhere: the system clock, or the one the caller hands in (tests: a FakeClock). */
@Global()
@Module({})
export class ClockModule {
  static forRoot(clock: Clock = new SystemClock()): DynamicModule {
    return { module: ClockModule, providers: [{ provide: Clock, useValue: clock }], exports: [Clock] };
  }
}
