import { trackResources } from './open-handles';

/**
 * `TEST_OPEN_HANDLES=1` (jest.config.js adds this file then): after each test file, the timers,
 * sockets and servers its tests left running are printed with where they were created - what
 * keeps Jest from exiting ("did not exit one second after the test run has completed"), which
 * `--detectOpenHandles` does not show for timers created inside the app.
 */
const resources = trackResources();
resources.enable();
afterAll(async () => {
  // Whatever the file's own afterAll hooks closed is gone after a short pause.
  await new Promise((r) => setTimeout(r, 200));
  const alive = resources.alive();
  if (alive.length) process.stderr.write(`open handles left by ${expect.getState().testPath}:\n  ${alive.join('\n  ')}\n`);
});
