// The guarantee in a real browser (Debian's Chromium, driven by
// playwright-core): a shop page (page.ts, the built client bundled) pays
// and refunds with IndexedDB storage while the test reloads the page, or
// cuts the network between page and server, at a random moment of each
// create or refund. The page calls resumePending() at every load. Afterwards
// the server holds exactly one payment per intended payment whose key was
// stored, one refund per stored refund key, and nothing else; nothing is
// left pending. Rounds: CMPAY_TS_BROWSER_ROUNDS (default 60; `make
// client-stress` runs 200), or CMPAY_TS_ROUNDS for both this test and the
// Node one. 60 rounds still give each pairing of disruption (reload, cut)
// and operation (create, refund) a dozen rounds or so at random moments,
// and the last test fails if one of them never happened.
import { existsSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest';
import type { PendingOperation } from '../../dist/index.js';
import { checkExactlyOnce, paymentsOf } from './check.js';

const rounds = Number(process.env.CMPAY_TS_BROWSER_ROUNDS ?? process.env.CMPAY_TS_ROUNDS ?? 60);
const batch = 20;

function findChromium(): string | undefined {
  return [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => p && existsSync(p));
}
const chromiumPath = findChromium();
if (!chromiumPath && process.env.CMPAY_REQUIRE_BROWSER) {
  throw new Error('Chromium is not installed and CMPAY_REQUIRE_BROWSER is set: install Debian\'s chromium');
}

/** A TCP proxy between the page and the server whose "network" the test can cut. */
class Proxy {
  #server: Server;
  #open = new Set<Socket>();
  #downUntil = 0;
  constructor(target: { host: string; port: number }) {
    this.#server = createServer((down) => {
      if (performance.now() < this.#downUntil) {
        down.destroy();
        return;
      }
      const up = connect(target.port, target.host);
      for (const s of [down, up]) {
        this.#open.add(s);
        s.on('close', () => this.#open.delete(s));
        s.on('error', () => undefined);
      }
      down.pipe(up);
      up.pipe(down);
      down.on('close', () => up.destroy());
      up.on('close', () => down.destroy());
    });
  }
  listen(): Promise<number> {
    return new Promise((ok) => this.#server.listen(0, '127.0.0.1', () => ok((this.#server.address() as { port: number }).port)));
  }
  /** Cuts every open connection, and refuses new ones for ms. */
  cut(ms: number) {
    this.#downUntil = performance.now() + ms;
    for (const s of this.#open) s.destroy();
  }
  close() {
    this.cut(0);
    this.#server.close();
  }
}

type Intent = { kind: 'create'; input: Record<string, unknown> } | { kind: 'refund'; paymentId: string; amount: string };
interface App {
  loaded: boolean;
  pendingAtLoad: PendingOperation[];
  idle(): boolean;
  pending(): PendingOperation[];
  storedOps(): PendingOperation[];
  errors(): string[];
  start(i: Intent): void;
  resume(): Promise<unknown>;
  time(i: Intent): Promise<number>;
}
const app = (page: Page) => page.evaluateHandle(() => (window as unknown as { app: App }).app);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!chromiumPath)(`a page reloaded or cut off mid-request (${rounds} rounds)`, () => {
  const run = `browser-${Date.now()}`;
  let browser: Browser;
  let page: Page;
  let proxy: Proxy;
  let pageUrl: string;
  let spanMs = 20;
  const seenAtLoad: PendingOperation[] = [];
  const pairs: Record<string, number> = { 'reload create': 0, 'reload refund': 0, 'cut create': 0, 'cut refund': 0 };

  const loaded = async () => {
    await page.waitForFunction(() => (window as unknown as { app?: App }).app?.loaded === true, null, { polling: 5, timeout: 20_000 });
    seenAtLoad.push(...(await page.evaluate(() => (window as unknown as { app: App }).app.pendingAtLoad)));
  };
  const idle = () => page.waitForFunction(() => (window as unknown as { app: App }).app.idle(), null, { polling: 5, timeout: 20_000 });

  beforeAll(async () => {
    const [host, port] = inject('serverAddr').split(':');
    proxy = new Proxy({ host, port: Number(port) });
    const proxyPort = await proxy.listen();
    browser = await chromium.launch({
      executablePath: chromiumPath,
      // As NOTES.md says: without the background-networking flags Chromium
      // floods the closed network with refused connections.
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    page = await (await browser.newContext()).newPage();
    const q = new URLSearchParams({ api: `http://127.0.0.1:${proxyPort}/graphql`, token: inject('token'), reenter: '1' });
    pageUrl = `${inject('pageOrigin')}/?${q}`;
    await page.goto(pageUrl);
    await loaded();
  });
  afterAll(async () => {
    await browser?.close();
    proxy?.close();
  });

  test('the page pays and refunds once when left alone', async () => {
    // Also measures how long a create takes: the disruptions fall in it.
    const clientId = `${run}-calibration`;
    const a = await app(page);
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      times.push(await a.evaluate((x, i) => x.time(i), { kind: 'create', input: { clientId: `${clientId}-${i}`, amount: '10.00', currency: 'BRL', method: 'PIX' } } as Intent));
    }
    spanMs = Math.max(5, times.sort((x, y) => x - y)[1]);
    const [p] = await paymentsOf(`${clientId}-0`);
    await a.evaluate((x, i) => x.time(i), { kind: 'refund', paymentId: p.id, amount: '1.00' } as Intent);
    const stored = await page.evaluate(() => (window as unknown as { app: App }).app.storedOps());
    expect(await checkExactlyOnce([0, 1, 2].map((i) => `${clientId}-${i}`), stored)).toEqual([]);
  });

  for (let from = 0; from < rounds; from += batch) {
    const to = Math.min(rounds, from + batch);
    test(`rounds ${from + 1}-${to}: reloads and cuts at random moments, then resumePending()`, async () => {
      const clientIds: string[] = [];
      const refundable: string[] = [];
      const tally = { reload: 0, cut: 0, create: 0, refund: 0 };
      for (let r = from; r < to; r++) {
        let intent: Intent;
        let clientId: string | undefined;
        if (refundable.length > 0 && Math.random() < 0.4) {
          intent = { kind: 'refund', paymentId: refundable.splice(Math.floor(Math.random() * refundable.length), 1)[0], amount: '1.00' };
        } else {
          clientId = `${run}-${r}`;
          clientIds.push(clientId);
          intent = { kind: 'create', input: { clientId, amount: '10.00', currency: 'BRL', method: 'CREDIT_CARD' } };
        }
        tally[intent.kind]++;
        await (await app(page)).evaluate((x, i) => x.start(i), intent);
        await sleep(Math.random() * spanMs * 1.5);
        const disruption = Math.random() < 0.5 ? 'reload' : 'cut';
        pairs[`${disruption} ${intent.kind}`]++;
        if (disruption === 'reload') {
          tally.reload++;
          await page.reload();
          await loaded();
        } else {
          tally.cut++;
          proxy.cut(Math.random() * 300);
        }
        await idle();
        // An operation that ran out of tries during the cut is resumed now.
        if ((await page.evaluate(() => (window as unknown as { app: App }).app.pending().length)) > 0) {
          await page.evaluate(() => (window as unknown as { app: App }).app.resume());
        }
        if (clientId) {
          const made = await paymentsOf(clientId);
          if (made.length === 1) refundable.push(made[0].id);
        }
      }
      // A last reload: whatever is still stored is resumed, and nothing is left.
      await page.reload();
      await loaded();
      await idle();
      const a = await app(page);
      expect(await a.evaluate((x) => x.pending())).toEqual([]);
      expect(await a.evaluate((x) => x.errors())).toEqual([]);
      const stored = [...(await a.evaluate((x) => x.storedOps())), ...seenAtLoad];
      expect(await checkExactlyOnce(clientIds, stored)).toEqual([]);
      console.log(`rounds ${from + 1}-${to}: ${JSON.stringify(tally)}; a create takes ${spanMs.toFixed(1)} ms`);
    });
  }

  // With fewer rounds (CMPAY_TS_BROWSER_ROUNDS=5) a pairing may be missing
  // by chance: below 40 the check is skipped.
  test.skipIf(rounds < 40)('the rounds tested something: every disruption hit both operations', () => {
    console.log(`disruption and operation over ${rounds} rounds: ${JSON.stringify(pairs)}`);
    for (const [pair, n] of Object.entries(pairs)) expect(n, pair).toBeGreaterThan(0);
  });
});
