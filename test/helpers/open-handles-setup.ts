import { trackResources } from './open-handles';

/**
 * `TEST_OPEN_HANDLES=1` (jest.config.js adds this file then): a second after each test file, the timers,
 * sockets and servers its tests left running are printed with where they were created - what
 * keeps Jest from exiting ("did not exit one second after the test run has completed"), which
 * `--detectOpenHandles` does not show for timers created inside the app.
 */
const resources = trackResources();
resources.enable();
afterAll(() => {
  // This hook runs before the test file's own top-level afterAll hooks (declaration order): look
  // a second later, when they have closed what they close (an unref'd timer: it keeps nothing alive).
  resources.stopRecording();
  const file = expect.getState().testPath;
  setTimeout(() => {
    const alive = resources.alive();
    if (alive.length) process.stderr.write(`open handles left by ${file}:\n  ${alive.join('\n  ')}\n`);
  }, 1000).unref();
});
