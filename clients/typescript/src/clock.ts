// Time, randomness and keys, injectable so that the unit tests run the
// retry policy without waiting and check its exact delays.

/** The clock the client waits on. */
export interface Clock {
  now(): number;
  /** Resolves after ms, or rejects with signal's reason once it fires. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** realClock is Date.now and setTimeout. */
export const realClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const onAbort = () => {
        clearTimeout(t);
        reject(signal?.reason);
      };
      const t = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/**
 * newIdempotencyKey makes a random UUID (version 4): crypto.randomUUID where
 * it exists, which browsers give only to secure contexts (https, localhost),
 * else the same from crypto.getRandomValues.
 */
export function newIdempotencyKey(): string {
  const c = globalThis.crypto;
  if (typeof c.randomUUID === 'function') return c.randomUUID();
  const b = c.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** anySignal fires when any of signals fires (AbortSignal.any where the runtime has it). */
export function anySignal(signals: Array<AbortSignal | undefined>): AbortSignal {
  const list = signals.filter((s): s is AbortSignal => s !== undefined);
  const any = (AbortSignal as { any?: (s: AbortSignal[]) => AbortSignal }).any;
  if (any) return any(list);
  const c = new AbortController();
  for (const s of list) {
    if (s.aborted) {
      c.abort(s.reason);
      break;
    }
    s.addEventListener('abort', () => c.abort(s.reason), { once: true });
  }
  return c.signal;
}

const durationUnits: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/**
 * parseDuration reads a duration as milliseconds: a number of milliseconds,
 * or a Go duration as the server's settings are written ("24h", "1h30m",
 * "90s"). It throws TypeError for anything else, zero and negatives included.
 */
export function parseDuration(v: number | string): number {
  let ms = typeof v === 'number' ? v : NaN;
  if (typeof v === 'string' && /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(v.trim())) {
    ms = 0;
    for (const [, n, , unit] of v.trim().matchAll(/(\d+(\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) ms += Number(n) * durationUnits[unit];
  }
  if (!Number.isFinite(ms) || ms <= 0) throw new TypeError(`not a positive duration: ${JSON.stringify(v)} (milliseconds, or e.g. "24h")`);
  return ms;
}
