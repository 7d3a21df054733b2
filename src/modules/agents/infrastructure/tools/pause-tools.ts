import { ToolFailure, ToolImplementation } from './demo-tools';
import { JsonSchema } from './json-schema';

/**
 * The built-ins that pause a run (CONTRACT 17), added to an agent by listing them: the run's
 * decider pauses on them (their definitions carry `pause`) and never executes them; `run` only
 * answers a call that reached it some other way.
 */
export function buildPauseTools(): ToolImplementation[] {
  return [
    pauseTool('ask_user', 'input', "Asks the user a question and waits for the answer: the user's next message is this tool's result.", {
      question: { type: 'string', minLength: 1, maxLength: 4000, description: 'What to ask the user.' },
    }),
    pauseTool('wait', 'timer', "Waits the given number of seconds (at most until the run's deadline), then continues.", {
      seconds: { type: 'number', minimum: 0, maximum: 31_622_400, description: 'How long to wait, in seconds.' },
    }),
    pauseTool('wait_until', 'timer', "Waits until the given time (ISO 8601, at most until the run's deadline), then continues.", {
      time: { type: 'string', format: 'date-time', description: 'When to continue, e.g. 2026-12-01T09:00:00Z.' },
    }),
  ];
}

/** One pausing built-in with a single required argument; a timer is idempotent (waiting again is harmless), a question is not. */
function pauseTool(name: string, pause: 'input' | 'timer', description: string, properties: Record<string, JsonSchema>): ToolImplementation {
  return {
    name,
    description,
    parameters: { type: 'object', properties, required: Object.keys(properties), additionalProperties: false },
    risk: 'auto',
    visibility: 'public',
    idempotent: pause === 'timer',
    executor: 'server',
    timeoutMs: 5_000,
    pause,
    run: async (): Promise<never> => {
      throw new ToolFailure('this tool pauses the run; it is not executed');
    },
  };
}
