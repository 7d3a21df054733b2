import { createHook } from 'node:async_hooks';

/**
 * Timers, sockets and servers created while it is on, and still alive (and keeping the process up)
 * when asked: what would keep Jest from exiting after the app closed. Jest's own (its per-test
 * timeout timers) are left out by their creation stack.
 */
export function trackResources(): { enable(): void; stopRecording(): void; alive(): string[] } {
  const live = new Map<number, { type: string; resource: any; where: string }>();
  let recording = true;
  const hook = createHook({
    init(asyncId, type, _trigger, resource) {
      if (!recording || !/^(Timeout|TCPWRAP|TCPSERVERWRAP|PIPEWRAP|UDPWRAP|PROCESSWRAP)$/.test(type)) return;
      const frames = new Error().stack!.split('\n').slice(2).filter((l) => !/\(node:|async_hooks/.test(l)).map((l) => l.trim());
      if (frames.some((f) => /jest-circus|@jest|jest-runner|jest-jasmine/.test(f))) return;
      const where = frames.slice(0, 3).join(' < ');
      live.set(asyncId, { type, resource, where });
    },
    destroy(asyncId) {
      live.delete(asyncId);
    },
  });
  return {
    enable: () => hook.enable(),
    /** From now on only what ends is followed (what the next test file makes is not this one's). */
    stopRecording: () => {
      recording = false;
    },
    alive: () => {
      hook.disable();
      return [...live.values()]
        .filter(({ type, resource }) => (type === 'Timeout' ? !resource._destroyed && resource.hasRef() : typeof resource.hasRef !== 'function' || resource.hasRef()))
        .map(({ type, where }) => `${type} ${where}`);
    },
  };
}
