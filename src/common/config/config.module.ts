import { DynamicModule, Global, Module } from '@nestjs/common';
import { DatabaseModule } from '../database/database.module';
import { AppConfig } from './app-config';

/** Makes the validated configuration and the database target injectable everywhere. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: ConfigModule,
      providers: [{ provide: AppConfig, useValue: config }, DatabaseModule.targetProvider],
      exports: [AppConfig, DatabaseModule.targetProvider.provide],
    };
  }
}
