// Starting a CMPay server for the tests: the global setup starts the one
// most tests share, and tests that need other settings (a short key TTL)
// start their own from the same binary.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

/** A running server: its process and address (host:port). */
export interface RunningServer {
  child: ChildProcess;
  addr: string;
  /** Stops it and waits for it to exit. */
  stop(): Promise<void>;
}

/**
 * startServer runs the binary on SQLite in dir and a random port, with env
 * added to its environment, and resolves once it prints its address; its
 * log is kept to explain an early exit.
 */
export function startServer(bin: string, dir: string, token: string, env: Record<string, string> = {}): Promise<RunningServer> {
  const child = spawn(bin, [], {
    env: {
      ...process.env,
      DATABASE_URL: `sqlite:${join(dir, 'cmpay.db')}`,
      ADDR: '127.0.0.1:0',
      API_TOKENS: token,
      ADMIN_PASSWORD: 'not-used-by-these-tests',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log: Buffer[] = [];
  child.stderr!.on('data', (b: Buffer) => log.push(b));
  const stop = () =>
    new Promise<void>((ok) => {
      if (child.exitCode !== null || child.signalCode !== null) return ok();
      child.once('exit', () => ok());
      child.kill('SIGTERM');
    });
  return new Promise((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /CMPay listening on http:\/\/(\S+)/.exec(out);
      if (m) ok({ child, addr: m[1], stop });
    });
    child.on('exit', (code) => fail(new Error(`the server exited (${code}) before listening:\n${Buffer.concat(log).toString().slice(-2000)}`)));
  });
}
