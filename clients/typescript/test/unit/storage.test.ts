import 'fake-indexeddb/auto';
import fs, { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test, vi } from 'vitest';
import {
  CMPayClient,
  CMPayError,
  StorageError,
  fileStorage,
  indexedDBStorage,
  memoryStorage,
  type PendingOperation,
  type PendingStorage,
} from '../../src/index.js';
import { fakeClock, keys, ok, payment, scriptedTransport } from './fakes.js';

const op = (key: string, amount = '10.50'): PendingOperation => ({
  operation: 'CREATE_PAYMENT',
  idempotencyKey: key,
  params: { clientId: 'c1', amount, currency: 'BRL', method: 'PIX' },
  startedAt: '2026-12-04T10:00:00.000Z',
});

// Each adapter, and how to open it again as a new process or page would.
let dbCount = 0;
const adapters: Array<[string, () => { first: PendingStorage; reopen: () => PendingStorage }]> = [
  ['memory', () => {
    const s = memoryStorage();
    return { first: s, reopen: () => s };
  }],
  ['file', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'cmpay-storage-')), 'pending.json');
    return { first: fileStorage(path), reopen: () => fileStorage(path) };
  }],
  ['indexedDB', () => {
    const name = `cmpay-test-${++dbCount}`;
    return { first: indexedDBStorage({ name }), reopen: () => indexedDBStorage({ name }) };
  }],
];

describe.each(adapters)('%s storage', (_name, make) => {
  test('keeps what was put, one entry per key, until removed, across a reopen', async () => {
    const { first, reopen } = make();
    expect(await first.load()).toEqual([]);
    await first.put(op('a'));
    await first.put(op('b'));
    await first.put(op('a', '11')); // same key: replaces
    expect((await reopen().load()).sort((x, y) => x.idempotencyKey.localeCompare(y.idempotencyKey))).toEqual([op('a', '11'), op('b')]);
    await first.remove('a');
    await first.remove('never-stored');
    expect(await reopen().load()).toEqual([op('b')]);
  });

  test('a change made after put does not reach what was stored', async () => {
    const { first, reopen } = make();
    const o = op('c');
    await first.put(o);
    (o.params as { amount: string }).amount = '999';
    expect(await reopen().load()).toEqual([op('c')]);
  });

  test('the key is stored before the request leaves', async () => {
    const { first, reopen } = make();
    let storedAtSend: PendingOperation[] = [];
    const transport = scriptedTransport([
      async (req) => {
        storedAtSend = await reopen().load();
        return ok({ createPayment: { payment: payment({ idempotencyKey: String(req.variables.idempotencyKey) }), replayed: false } });
      },
    ]);
    const c = new CMPayClient({ url: 'http://x/graphql', token: 't', storage: first, transport, clock: fakeClock(), newKey: () => 'fresh' });
    await c.createPayment({ clientId: 'c1', amount: '1', currency: 'BRL', method: 'PIX' });
    expect(keys(storedAtSend)).toEqual(['fresh']);
    expect(await reopen().load()).toEqual([]);
  });
});

describe('file storage', () => {
  test('writes through a temporary file renamed over the old one, and leaves none behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cmpay-storage-'));
    const s = fileStorage(join(dir, 'p.json'));
    await Promise.all([s.put(op('a')), s.put(op('b')), s.put(op('c')), s.remove('b')]);
    expect(readdirSync(dir)).toEqual(['p.json']);
    expect(keys(JSON.parse(readFileSync(join(dir, 'p.json'), 'utf8')).operations)).toEqual(['a', 'c']);
  });

  test('a file that is not its own is refused, not overwritten', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'cmpay-storage-')), 'p.json');
    writeFileSync(path, 'not json');
    const s = fileStorage(path);
    expect(() => s.load()).toThrow(/not the client's JSON/);
    await expect(s.put(op('a'))).rejects.toThrow(/not the client's JSON/);
    expect(readFileSync(path, 'utf8')).toBe('not json');
  });

  test('two fileStorage instances of one file in one process keep each other\'s writes', async () => {
    for (let round = 0; round < 10; round++) {
      const dir = mkdtempSync(join(tmpdir(), 'cmpay-storage-'));
      // The same file named two ways, as two tenants' clients of one server might.
      const a = fileStorage(join(dir, 'p.json'));
      const b = fileStorage(join(dir, '.', 'p.json'));
      await Promise.all([a.put(op('a1')), b.put(op('b1')), a.put(op('a2')), b.put(op('b2')), a.remove('a1')]);
      expect({ round, keys: keys(fileStorage(join(dir, 'p.json')).load()).sort() }).toEqual({ round, keys: ['a2', 'b1', 'b2'] });
      expect(readdirSync(dir)).toEqual(['p.json']);
    }
  });

  test('two clients of one process, each with its own fileStorage of one file, both have their key stored before it is sent', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'cmpay-storage-')), 'pending.json');
    const sent: string[] = [];
    const hang = ((req: { variables: Record<string, unknown> }) => (sent.push(String(req.variables.idempotencyKey)), new Promise(() => undefined))) as never;
    const make = (key: string) =>
      new CMPayClient({ url: 'http://x/graphql', token: 't', storage: fileStorage(path), transport: hang, clock: fakeClock(), newKey: () => key });
    void make('tenant-a').createPayment({ clientId: 'c1', amount: '1', currency: 'BRL', method: 'PIX' });
    void make('tenant-b').createPayment({ clientId: 'c2', amount: '1', currency: 'BRL', method: 'PIX' });
    await expect.poll(() => sent.length).toBe(2);
    expect(keys(fileStorage(path).load()).sort()).toEqual(['tenant-a', 'tenant-b']);
  });
});

describe('client and storage', () => {
  test('pending() answers at once with synchronous storage, and after ready with IndexedDB', async () => {
    const mem = memoryStorage();
    await mem.put(op('m'));
    const c1 = new CMPayClient({ url: 'http://x/graphql', token: 't', storage: mem, transport: scriptedTransport([]) });
    expect(keys(c1.pending())).toEqual(['m']);

    const idb = indexedDBStorage({ name: `cmpay-test-${++dbCount}` });
    await idb.put(op('i'));
    const c2 = new CMPayClient({ url: 'http://x/graphql', token: 't', storage: idb, transport: scriptedTransport([]) });
    expect(() => c2.pending()).toThrow(StorageError);
    await c2.ready;
    expect(keys(c2.pending())).toEqual(['i']);
  });

  test('a storage that cannot write stops the request before it leaves', async () => {
    const broken: PendingStorage = { load: () => [], put: () => Promise.reject(new Error('disk full')), remove: () => undefined };
    const transport = scriptedTransport([]);
    const c = new CMPayClient({ url: 'http://x/graphql', token: 't', storage: broken, transport });
    await expect(c.createPayment({ clientId: 'c1', amount: '1', currency: 'BRL', method: 'PIX' })).rejects.toMatchObject({
      code: 'STORAGE_FAILED',
    });
    expect(transport.requests).toEqual([]);
  });

  test('outside browsers, a client without storage is refused rather than silently forgetting keys', () => {
    const saved = globalThis.indexedDB;
    // @ts-expect-error removing fake-indexeddb's global for this test
    delete globalThis.indexedDB;
    try {
      expect(() => new CMPayClient({ url: 'http://x/graphql', token: 't' })).toThrow(/needs storage/);
    } finally {
      globalThis.indexedDB = saved;
    }
  });
});

describe('fileStorage whose folder fsync fails after the rename', () => {
  test('the key the failed put wrote is not sent later under a second key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cmpay-fsync-'));
    const file = join(dir, 'pending.json');
    const input = { clientId: 'c1', amount: '10.50', currency: 'BRL', method: 'PIX' as const };
    let n = 0;
    const client = (storage: PendingStorage, transport: ReturnType<typeof scriptedTransport>) =>
      new CMPayClient({ url: 'http://x/graphql', token: 't', storage, transport, clock: fakeClock(), newKey: () => `fk-${++n}` });
    const created = (req: { variables: Record<string, unknown> }) =>
      ok({ createPayment: { payment: payment({ idempotencyKey: String(req.variables.idempotencyKey) }), replayed: false } });
    const realOpen = fs.promises.open.bind(fs.promises);
    const spy = vi.spyOn(fs.promises, 'open').mockImplementation((async (p: string, flags: string) => {
      if (p === dir) throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
      return realOpen(p, flags);
    }) as typeof fs.promises.open);
    let err: CMPayError;
    try {
      err = (await client(fileStorage(file), scriptedTransport([])).createPayment(input).catch((e: unknown) => e)) as CMPayError;
    } finally {
      spy.mockRestore();
    }
    expect(err).toBeInstanceOf(StorageError);
    // The removal's fsync failed too: the caller is not told nothing was sent.
    expect(err.pending).toBe(true);
    // A caller paying again anyway, then the next start: one key sent.
    const t1 = scriptedTransport([created]);
    await client(fileStorage(file), t1).createPayment(input);
    const t2 = scriptedTransport([created]);
    await client(fileStorage(file), t2).resumePending();
    const sent = [...t1.requests, ...t2.requests].filter((r) => r.operationName === 'CreatePayment').map((r) => r.variables.idempotencyKey);
    expect(new Set(sent).size, `one intended payment sent under keys ${JSON.stringify(sent)}`).toBe(1);
  });
});
