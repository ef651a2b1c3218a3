// Where the client keeps the operations it has not finished: the key is
// written here before the request leaves, and removed only once the
// operation has a final answer, so that a reload, a crash or a killed
// process resumes with the same key instead of minting another.
import { openDB, type IDBPDatabase } from 'idb';
import { newIdempotencyKey } from './clock.js';
import type { PendingOperation } from './types.js';

/**
 * A durable store of pending operations, one per idempotency key. put and
 * remove resolve only once the change is durable: the client sends nothing
 * before put has resolved. load may be synchronous (memory, file), which
 * lets pending() answer right after the client is made; an asynchronous
 * load (IndexedDB) is awaited by client.ready.
 *
 * Write your own for any other store (a database row per key, say).
 */
export interface PendingStorage {
  /** Every stored operation. */
  load(): PendingOperation[] | Promise<PendingOperation[]>;
  /** Stores op under op.idempotencyKey, replacing any op stored under that key; resolves once durable. */
  put(op: PendingOperation): void | Promise<void>;
  /** Forgets the op stored under this key, if any; resolves once durable. */
  remove(idempotencyKey: string): void | Promise<void>;
  /**
   * True when everything stored here belongs to one user (a browser
   * profile's IndexedDB): the client then joins a call to a stored operation
   * with equal parameters by default (CMPayClientOptions.joinByParameters).
   */
  readonly singleUser?: boolean;
}

/** A PendingStorage whose load answers at once (memory, file): pending() then works right after the client is made. */
export interface SyncPendingStorage extends PendingStorage {
  load(): PendingOperation[];
}

/** memoryStorage keeps operations in memory: for tests, and for callers that keep them elsewhere. Share one between clients to stand for a reload. */
export function memoryStorage(): SyncPendingStorage {
  const ops = new Map<string, PendingOperation>();
  return {
    load: () => [...ops.values()].map((op) => structuredClone(op)),
    put: (op) => {
      ops.set(op.idempotencyKey, structuredClone(op));
    },
    remove: (key) => {
      ops.delete(key);
    },
  };
}

// The part of node:fs the file adapter uses, typed here so that the library's
// types do not depend on Node's.
interface NodeFS {
  readFileSync(path: string, encoding: 'utf8'): string;
  promises: {
    readFile(path: string, encoding: 'utf8'): Promise<string>;
    open(path: string, flags: string): Promise<{
      writeFile(data: string): Promise<void>;
      sync(): Promise<void>;
      close(): Promise<void>;
    }>;
    rename(from: string, to: string): Promise<void>;
    unlink(path: string): Promise<void>;
  };
}
interface NodePath {
  dirname(p: string): string;
  resolve(p: string): string;
}

function nodeModule<T>(name: string): T {
  // process.getBuiltinModule (Node.js 20.16+) reaches node:fs without an
  // import statement, so the same bundle loads in browsers, where this adapter
  // is never called.
  const proc = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const mod = proc?.getBuiltinModule?.(name);
  if (!mod) throw new Error(`fileStorage needs Node.js 20.16 or newer (${name} is not reachable here)`);
  return mod as T;
}

interface FileContent {
  version: 1;
  operations: PendingOperation[];
}

function parseFile(text: string, path: string): PendingOperation[] {
  let content: FileContent;
  try {
    content = JSON.parse(text) as FileContent;
  } catch (err) {
    throw new Error(`fileStorage: ${path} is not the client's JSON; refusing to overwrite it`, { cause: err });
  }
  if (content?.version !== 1 || !Array.isArray(content.operations)) {
    throw new Error(`fileStorage: ${path} is not a version 1 pending-operations file; refusing to overwrite it`);
  }
  return content.operations;
}

// The last change queued for each file, by resolved path: every
// fileStorage of one file in this process serializes its changes behind
// the others', so that none overwrites a change it did not read.
const fileQueues = new Map<string, Promise<unknown>>();

/**
 * fileStorage keeps operations in a JSON file (Node.js 20.16+). Every change
 * writes a new file, fsyncs it, renames it over the old one and fsyncs the
 * folder, so a process killed at any moment leaves either the old list or
 * the new one. Changes are read-modify-write, serialized within the process
 * (across every fileStorage of the same file); give each process its own
 * file.
 */
export function fileStorage(path: string): SyncPendingStorage {
  const fs = nodeModule<NodeFS>('node:fs');
  const { dirname, resolve } = nodeModule<NodePath>('node:path');
  const file = resolve(path);

  const readSync = (): PendingOperation[] => {
    let text: string;
    try {
      text = fs.readFileSync(path, 'utf8');
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return [];
      throw err;
    }
    return parseFile(text, path);
  };

  const write = async (ops: PendingOperation[]) => {
    // A random name: no other writer of this folder (another fileStorage,
    // another process) writes the same temporary file.
    const tmp = `${path}.${newIdempotencyKey()}.tmp`;
    const body = JSON.stringify({ version: 1, operations: ops } satisfies FileContent, null, 1);
    const fh = await fs.promises.open(tmp, 'w');
    try {
      await fh.writeFile(body);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.promises.rename(tmp, path);
    const dir = await fs.promises.open(dirname(path), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  };

  const change = (f: (ops: PendingOperation[]) => PendingOperation[]): Promise<void> => {
    const next = (fileQueues.get(file) ?? Promise.resolve()).then(async () => write(f(readSync())));
    const tail = next.catch(() => undefined);
    fileQueues.set(file, tail);
    // The map holds a file only while a change to it is queued.
    void tail.then(() => {
      if (fileQueues.get(file) === tail) fileQueues.delete(file);
    });
    return next;
  };

  return {
    load: readSync,
    put: (op) => change((ops) => [...ops.filter((o) => o.idempotencyKey !== op.idempotencyKey), op]),
    remove: (key) => change((ops) => ops.filter((o) => o.idempotencyKey !== key)),
  };
}

/** Options of indexedDBStorage. */
export interface IndexedDBStorageOptions {
  /** The database's name; default "cmpay-client". Clients sharing one name share their pending operations (tabs of one site do). */
  name?: string;
}

const storeName = 'pending';

/**
 * indexedDBStorage keeps operations in the browser's IndexedDB, the default
 * in browsers. Writes use the "strict" durability, so a put has reached the
 * disk when it resolves, and survives a reload, a closed tab or a crash.
 */
export function indexedDBStorage(opts: IndexedDBStorageOptions = {}): PendingStorage {
  let db: Promise<IDBPDatabase> | undefined;
  const open = () =>
    (db ??= openDB(opts.name ?? 'cmpay-client', 1, {
      upgrade(d) {
        d.createObjectStore(storeName, { keyPath: 'idempotencyKey' });
      },
    }));
  const write = async (f: (store: { put(v: unknown): unknown; delete(k: string): unknown }) => unknown) => {
    const tx = (await open()).transaction(storeName, 'readwrite', { durability: 'strict' });
    await Promise.all([f(tx.store), tx.done]);
  };
  return {
    singleUser: true,
    load: async () => (await open()).getAll(storeName) as Promise<PendingOperation[]>,
    put: (op) => write((s) => s.put(op)),
    remove: (key) => write((s) => s.delete(key)),
  };
}

/** defaultStorage is IndexedDB where there is one (browsers), memory elsewhere. */
export function defaultStorage(): PendingStorage {
  return typeof indexedDB === 'undefined' ? memoryStorage() : indexedDBStorage();
}
