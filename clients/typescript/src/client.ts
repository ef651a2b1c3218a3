// CMPayClient: the half of "a client that retries never pays twice" that
// runs on the caller's side. Every operation's key is stored before its
// request leaves and removed only once it has a final answer; retries and
// resumePending() send the stored key again, never a new one.
import { anySignal, newIdempotencyKey, parseDuration, realClock, type Clock } from './clock.js';
import {
  AbortedError,
  type AuthError,
  CMPayError,
  DeclinedError,
  ExpiredOperationError,
  KeyReusedError,
  NotFoundError,
  ProcessorRefusedError,
  RefundFailedError,
  StorageError,
  UnavailableError,
  WaitTimeoutError,
} from './errors.js';
import { defaultSubscriber, subscriptionRefused, type DefaultSubscriber, type Subscriber } from './events.js';
import {
  CancelPaymentDocument,
  CapturePaymentDocument,
  CreatePaymentDocument,
  PaymentAttemptsDocument,
  PaymentDocument,
  PaymentEventsDocument,
  PaymentsByKeyDocument,
  RefundPaymentDocument,
} from './gql/graphql.js';
import { canonicalAmount, canonicalClientId, canonicalCurrency, differingFields } from './params.js';
import { backoffDelay, judge, retryPolicy, type RetryOptions, type RetryPolicy, type Verdict } from './retry.js';
import { indexedDBStorage, type PendingStorage } from './storage.js';
import { fetchTransport, type GraphQLRequest, type Transport } from './transport.js';
import {
  isSettled,
  type CallOptions,
  type CancelPaymentParams,
  type CancelPaymentResult,
  type CapturePaymentParams,
  type CapturePaymentResult,
  type CreatePaymentInput,
  type CreatePaymentResult,
  type Operation,
  type OperationParams,
  type Payment,
  type PaymentResult,
  type PendingOperation,
  type Refund,
  type RefundPaymentParams,
  type RefundPaymentResult,
} from './types.js';

/** Options of CMPayClient. */
export interface CMPayClientOptions {
  /** The GraphQL endpoint, e.g. "https://pay.example.com/graphql". */
  url: string;
  /** An API token: sent as `Authorization: Bearer <token>`. */
  token: string;
  /**
   * Where keys are kept until their operation has a final answer. Default:
   * indexedDBStorage() in browsers. Elsewhere there is no default: pass
   * fileStorage(path), your own PendingStorage, or memoryStorage() to give up
   * surviving a restart knowingly.
   */
  storage?: PendingStorage;
  /** How requests are retried. */
  retry?: RetryOptions;
  /**
   * How long the server remembers a key: its IDEMPOTENCY_KEY_TTL, in
   * milliseconds or written as the server's setting ("24h", "72h"); default
   * 24 h. It must not exceed the server's: a stored operation younger than
   * this less a tenth (room for clock changes) is sent again with its key,
   * trusting the server to replay it. An older one is never sent again
   * blindly, since the server may take its key for a new one: the client
   * first looks up what was made under the key.
   */
  idempotencyKeyTTL?: number | string;
  /**
   * Whether a call without idempotencyKey joins a stored, unsettled
   * operation with equal parameters (and answers `replayed: true`) instead
   * of making a new key, or, once, one that this client's resumePending()
   * settled: right for one shopper clicking Pay twice or again after a
   * reload, wrong for a server paying for many customers, whose
   * equal orders are distinct payments. Default: true when the storage holds
   * one user's operations (`singleUser`, as indexedDBStorage does), false
   * otherwise. Passing an idempotencyKey per intended operation always works.
   */
  joinByParameters?: boolean;
  /** The fetch to use; default globalThis.fetch. */
  fetch?: typeof fetch;
  /** A WebSocket class for subscriptions (Node.js 20 has none: pass the `ws` package's); without one, or with false, SSE is used. */
  webSocketImpl?: unknown;
  /** How often waitForSettled reads the payment when no event comes; default 5 s. */
  pollIntervalMs?: number;
  /**
   * Called once, with an AuthError (FORBIDDEN or UNAUTHENTICATED), when the
   * server refuses this client's token a subscription to events (a
   * payments:create token may not follow events): the client then stops
   * subscribing for good, and waitForSettled and watchPayment read the
   * payment every pollIntervalMs. Should it throw, the throw is reported
   * with console.warn and changes nothing.
   */
  onEventsRefused?: (err: AuthError) => void;
  /** Called once an operation's key is durably stored, before its request leaves. */
  onStored?: (op: PendingOperation) => void;
  /**
   * Called once an operation has its final answer and left storage (or,
   * when its removal failed, was marked settled there). Should it throw (or
   * reject), the throw is reported with console.warn and changes nothing:
   * the call still answers what the server did.
   */
  onSettled?: (op: PendingOperation) => void | Promise<void>;
  /** Replaces the HTTP transport (tests). */
  transport?: Transport;
  /** Replaces the subscription transport (tests). */
  subscriber?: Subscriber;
  /** Replaces the clock (tests). */
  clock?: Clock;
  /** Replaces Math.random in the backoff's jitter (tests). */
  random?: () => number;
  /** Replaces the key generator (tests). */
  newKey?: () => string;
}

/** What resumePending() did with one stored operation. */
export interface ResumedOperation {
  /** The operation as it was stored. */
  pending: PendingOperation;
  /** The answer, when one came. */
  result?: PaymentResult;
  /** The error, when the operation failed or could not be sent. */
  error?: CMPayError;
  /** True when the operation has its final answer (success or final error) and left storage. */
  settled: boolean;
}

/** Options of waitForSettled. */
export interface WaitOptions {
  /** Give up after this long with WaitTimeoutError; default 120 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

const documents = {
  CREATE_PAYMENT: { doc: CreatePaymentDocument, name: 'CreatePayment', field: 'createPayment' },
  CAPTURE_PAYMENT: { doc: CapturePaymentDocument, name: 'CapturePayment', field: 'capturePayment' },
  CANCEL_PAYMENT: { doc: CancelPaymentDocument, name: 'CancelPayment', field: 'cancelPayment' },
  REFUND_PAYMENT: { doc: RefundPaymentDocument, name: 'RefundPayment', field: 'refundPayment' },
} as const;

function requestFor(op: PendingOperation): GraphQLRequest {
  const d = documents[op.operation];
  const variables: Record<string, unknown> =
    op.operation === 'CREATE_PAYMENT'
      ? { input: op.params, idempotencyKey: op.idempotencyKey }
      : { ...op.params, idempotencyKey: op.idempotencyKey };
  return { query: d.doc.toString(), operationName: d.name, variables };
}

/**
 * A CMPay client that never loses its idempotency key. Make one per page or
 * process and call resumePending() at start; every other method may be
 * called at once (each waits for `ready`).
 */
export class CMPayClient {
  /** Resolves once stored operations are loaded (at once for memory and file storage). */
  readonly ready: Promise<void>;

  readonly #storage: PendingStorage;
  readonly #transport: Transport;
  readonly #policy: RetryPolicy;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #newKey: () => string;
  readonly #pollIntervalMs: number;
  readonly #subscriber: Subscriber;
  readonly #ownSubscriber?: DefaultSubscriber;
  readonly #onStored?: (op: PendingOperation) => void;
  readonly #onSettled?: (op: PendingOperation) => void | Promise<void>;
  readonly #onEventsRefused?: (err: AuthError) => void;
  readonly #ttlMs: number;
  readonly #join: boolean;
  // Names this client in the operations it stores or sends (sender): see #onlySender.
  readonly #id = newIdempotencyKey();

  // What this client knows of storage: loaded at start, then kept in step
  // with every put and remove it makes, and read again before joining an
  // operation another client (tab) stored, which may have settled it since.
  #known = new Map<string, PendingOperation>();
  // Keys this client stored itself: joining them needs no second look.
  #own = new Set<string>();
  #loaded = false;
  // One request loop per key at a time: a resume and a call for the same
  // operation share it (#execute).
  #inflight = new Map<string, Flight>();
  // Operations whose put has not resolved yet, and that put: a second call
  // with the same parameters waits for it instead of minting another key.
  #starting = new Map<string, PendingOperation>();
  #storing = new Map<string, Promise<void>>();
  #resuming?: Promise<ResumedOperation[]>;
  // What resumePending() settled with an answer, by key, while joining by
  // parameters: the operation is gone from storage, but a reloaded page that
  // shows its form again is still the shopper's first click, so the first
  // equal call without a key is answered with it (#takeResumed).
  #resumed = new Map<string, { op: PendingOperation; result: PaymentResult; at: number }>();
  // Keys this client stored and sent only with answers that prove nothing
  // was applied: a refusal that does not judge the operation (a 401, a
  // proxy's 403) may then forget it, if no other client sent it
  // (#onlySender). A key leaves at its first try without such an answer;
  // keys loaded from storage never enter.
  #clean = new Set<string>();
  // Keys settled whose removal from storage failed, each with the settled
  // operation's startedAt: that operation is never joined, and not sent
  // again by resumePending(), which tries the removal again. A new operation
  // stored under the key (after a refusal that left it unused) clears it.
  #settledKeys = new Map<string, string>();
  // When a try of each key last left here (#markSent).
  #lastSent = new Map<string, number>();
  #loadError?: StorageError;
  // Why the server refused this client's token a subscription, once it has:
  // no later watch subscribes (#follow), since a token's scopes do not
  // change by asking again.
  #eventsRefused?: AuthError;

  constructor(opts: CMPayClientOptions) {
    if (!opts.url || !opts.token) throw new TypeError('CMPayClient needs url and token');
    let storage = opts.storage;
    if (!storage) {
      if (typeof indexedDB === 'undefined') {
        throw new TypeError(
          'CMPayClient needs storage here (no IndexedDB): pass fileStorage(path), your own PendingStorage, or memoryStorage()',
        );
      }
      storage = indexedDBStorage();
    }
    this.#storage = storage;
    this.#transport = opts.transport ?? fetchTransport(opts.url, opts.token, opts.fetch);
    this.#policy = retryPolicy(opts.retry);
    this.#clock = opts.clock ?? realClock;
    this.#random = opts.random ?? Math.random;
    this.#newKey = opts.newKey ?? newIdempotencyKey;
    this.#pollIntervalMs = opts.pollIntervalMs ?? 5_000;
    this.#onStored = opts.onStored;
    this.#onSettled = opts.onSettled;
    this.#onEventsRefused = opts.onEventsRefused;
    this.#ttlMs = parseDuration(opts.idempotencyKeyTTL ?? 24 * 3_600_000);
    this.#join = opts.joinByParameters ?? storage.singleUser === true;
    if (opts.subscriber) {
      this.#subscriber = opts.subscriber;
    } else {
      this.#ownSubscriber = defaultSubscriber({
        url: opts.url,
        token: opts.token,
        webSocketImpl: opts.webSocketImpl,
        fetchFn: opts.fetch,
      });
      this.#subscriber = this.#ownSubscriber.subscribe;
    }

    let loaded: ReturnType<PendingStorage['load']>;
    try {
      loaded = storage.load();
    } catch (err) {
      throw this.#loadFailed(err);
    }
    if (Array.isArray(loaded)) {
      this.#remember(loaded);
      this.ready = Promise.resolve();
    } else {
      this.ready = Promise.resolve(loaded).then(
        (ops) => this.#remember(ops),
        (err: unknown) => {
          throw this.#loadFailed(err);
        },
      );
      // Every method awaits ready and reports its failure; this keeps an
      // unawaited ready from being an unhandled rejection.
      this.ready.catch(() => undefined);
    }
  }

  #remember(ops: PendingOperation[]) {
    for (const op of this.#live(ops)) this.#known.set(op.idempotencyKey, op);
    this.#loaded = true;
  }

  // #sync makes #known what storage holds, as just loaded: operations
  // another client settled leave it, those it stored join it. Operations
  // whose put has not resolved yet, or whose request is in flight here, stay.
  #sync(stored: PendingOperation[]) {
    const keys = new Set(stored.map((op) => op.idempotencyKey));
    for (const key of this.#known.keys()) {
      if (!keys.has(key) && !this.#starting.has(key) && !this.#inflight.has(key)) this.#known.delete(key);
    }
    for (const op of stored) if (!this.#inflight.has(op.idempotencyKey)) this.#known.set(op.idempotencyKey, op);
  }

  #loadFailed(err: unknown): StorageError {
    this.#loadError = loadFailed(err);
    return this.#loadError;
  }

  /**
   * The operations stored and not settled yet, oldest first: those loaded at
   * start and those this client stored since. Throws StorageError before
   * `ready` has resolved (IndexedDB loads asynchronously).
   */
  pending(): PendingOperation[] {
    if (this.#loadError) throw this.#loadError;
    if (!this.#loaded) {
      throw new StorageError('stored operations are still loading: await client.ready first', { code: 'STORAGE_NOT_READY' });
    }
    return [...this.#known.values()]
      .sort((a, b) => a.startedAt.localeCompare(b.startedAt))
      .map((op) => structuredClone(op));
  }

  /**
   * Forgets a stored operation for good: it is no longer joined nor sent by
   * resumePending(). For an operation that cannot settle (a lookup that keeps
   * failing, a refusal that never judges it) once the caller knows its fate
   * some other way; forgetting one whose fate is unknown gives up the
   * guarantee for it. Throws StorageError when the removal fails.
   */
  async discard(idempotencyKey: string): Promise<void> {
    await this.ready;
    const inflight = this.#inflight.get(idempotencyKey)?.done ?? this.#storing.get(idempotencyKey);
    if (inflight) await inflight.catch(() => undefined);
    try {
      await this.#storage.remove(idempotencyKey);
    } catch (err) {
      throw new StorageError(`could not remove the stored operation: ${String(err)}`, { code: 'STORAGE_FAILED', idempotencyKey, cause: err });
    }
    this.#drop(idempotencyKey);
    this.#settledKeys.delete(idempotencyKey);
  }

  // #drop forgets what this client holds of the operation under key, once
  // it is discarded or settled (#settle).
  #drop(key: string) {
    this.#known.delete(key);
    this.#own.delete(key);
    this.#clean.delete(key);
  }

  /** Creates a payment, exactly once per key however often it is retried or resumed. */
  createPayment(input: CreatePaymentInput, opts: CallOptions = {}): Promise<CreatePaymentResult> {
    return this.#run('CREATE_PAYMENT', input, opts);
  }

  /** Captures an AUTHORIZED payment (all of it when amount is omitted). */
  capturePayment(params: CapturePaymentParams, opts: CallOptions = {}): Promise<CapturePaymentResult> {
    return this.#run('CAPTURE_PAYMENT', params, opts);
  }

  /** Cancels an AUTHORIZED payment. */
  cancelPayment(params: CancelPaymentParams, opts: CallOptions = {}): Promise<CancelPaymentResult> {
    return this.#run('CANCEL_PAYMENT', params, opts);
  }

  /** Refunds a captured payment (all that is left when amount is omitted). */
  refundPayment(params: RefundPaymentParams, opts: CallOptions = {}): Promise<RefundPaymentResult> {
    return this.#run('REFUND_PAYMENT', params, opts) as Promise<RefundPaymentResult>;
  }

  /**
   * Sends every stored operation again, oldest first, each with its own key,
   * and resolves to what became of each: the server's replay is the answer.
   * An operation the server may have forgotten (stale) is looked up instead
   * of sent. Call it at start: it finishes what a reload, a crash or a lost
   * connection interrupted. Never rejects for an operation's failure: see
   * each outcome's error.
   */
  resumePending(): Promise<ResumedOperation[]> {
    this.#resuming ??= this.#resume().finally(() => {
      this.#resuming = undefined;
    });
    return this.#resuming;
  }

  async #resume(): Promise<ResumedOperation[]> {
    await this.ready;
    let loaded: PendingOperation[];
    try {
      loaded = await this.#storage.load();
    } catch (err) {
      throw loadFailed(err);
    }
    const stored: PendingOperation[] = [];
    for (const op of loaded) {
      if (op.settled === true) await this.#dropTombstone(op.idempotencyKey);
      else if (this.#settledHere(op)) await this.#forget(op);
      else {
        // Another operation under a key settled here replaced the settled one.
        this.#settledKeys.delete(op.idempotencyKey);
        stored.push(op);
      }
    }
    this.#sync(stored);
    stored.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
    const out: ResumedOperation[] = [];
    for (const op of stored) {
      try {
        // A key the server still holds is sent again, and its replay (or
        // refusal) is the answer; a stale one is looked up (#send).
        const answer = this.#execute(op);
        const flight = this.#inflight.get(op.idempotencyKey);
        const result = await answer;
        // Only a payment with nothing left to happen: a Pix still waiting
        // for its payer answered later would show a code that may have
        // expired since. Not a payment made that ended unpaid (a Pix
        // expired, a hold canceled): paying again is a new try, as after
        // a decline. And only when no call shared this request: a click
        // that joined it was the shopper's first, and has its answer.
        const unpaid = op.operation === 'CREATE_PAYMENT' && (result.payment.status === 'EXPIRED' || result.payment.status === 'CANCELED');
        const shared = flight !== undefined && flight.callers - flight.aborted > 1;
        if (result.settled && this.#join && isSettled(result.payment) && !unpaid && !shared) {
          this.#resumed.set(op.idempotencyKey, { op, result, at: this.#clock.now() });
        }
        out.push({ pending: op, result, settled: result.settled });
      } catch (err) {
        const error = err instanceof CMPayError ? err : new CMPayError(String(err), { code: 'CLIENT_ERROR', cause: err });
        out.push({ pending: op, error, settled: !this.#known.has(op.idempotencyKey) });
      }
    }
    return out;
  }

  // #dropTombstone removes an operation some client settled and could not
  // remove (#forget); should that fail again, the tombstone stays, skipped.
  async #dropTombstone(key: string) {
    try {
      await this.#storage.remove(key);
    } catch {
      // Left for the next resumePending().
    }
  }

  async #run<O extends Operation>(operation: O, params: OperationParams[O], opts: CallOptions): Promise<PaymentResult> {
    await this.ready;
    // A call under a resumed operation's key is that operation asked for
    // again: the answer it gets is the one a call without a key would join.
    if (opts.idempotencyKey !== undefined) this.#resumed.delete(opts.idempotencyKey);
    const resumed = opts.idempotencyKey === undefined ? this.#takeResumed({ operation, params } as PendingOperation) : undefined;
    if (resumed) return { ...resumed, replayed: true };
    const { op, joined, staleJoin } = await this.#begin({ operation, params, idempotencyKey: opts.idempotencyKey } as PendingOperation);
    let result: PaymentResult;
    try {
      result = await this.#execute(op, opts.signal);
    } catch (err) {
      // Joined by parameters to a stale refund nobody made, which was
      // dropped: this call is a refund wanted now, under a key of its own.
      if (err instanceof ExpiredOperationError && staleJoin && !this.#known.has(op.idempotencyKey)) {
        return this.#run(operation, params, opts);
      }
      throw err;
    }
    // A call that joined another's operation did not make it.
    return joined ? { ...result, replayed: true } : result;
  }

  // #takeResumed answers a call without a key, when joining by parameters,
  // with an operation of equal parameters that resumePending() settled, once:
  // the shopper who reloads mid-payment and pays again gets that payment, and
  // a later equal call is a new one. Nothing is sent: the answer is the one
  // resumePending() had, however old the key. Only within resumedAnswerMs of
  // that answer (or idempotencyKeyTTL, if shorter).
  #takeResumed(wanted: Pick<PendingOperation, 'operation' | 'params'>): PaymentResult | undefined {
    if (!this.#join) return undefined;
    const window = Math.min(this.#ttlMs, resumedAnswerMs);
    for (const [key, { op, result, at }] of this.#resumed) {
      if (!(this.#clock.now() - at < window)) this.#resumed.delete(key);
      else if (differingFields(op, wanted).length === 0) {
        this.#resumed.delete(key);
        return result;
      }
    }
    return undefined;
  }

  // #begin picks the operation's key and stores it: the caller's key; else,
  // when joining by parameters, the key of a stored operation with the same
  // parameters (the same payment entered again after a reload, or a second
  // click while the first is being stored); else a new one. It resolves
  // once the key is durable.
  async #begin(
    wanted: Omit<PendingOperation, 'startedAt' | 'idempotencyKey'> & { idempotencyKey?: string },
  ): Promise<{ op: PendingOperation; joined: boolean; staleJoin: boolean }> {
    let held = this.#held(wanted);
    const byParams = wanted.idempotencyKey === undefined;
    if (byParams ? this.#join && (!held || !this.#mine(held.idempotencyKey)) : !held) {
      // Joined by parameters to an operation another client (tab) stored:
      // only if storage still holds it. Settled there, it is done, and the
      // same parameters are a new payment. With nothing held here, another
      // client may have stored an equal operation since this one loaded: it
      // is still the shopper's first click. A caller's key unknown here may
      // have been stored by another client since this one loaded: that
      // operation is joined (and looked up first when stale), never
      // replaced with a new startedAt. One read of storage per call.
      await this.#reload();
      held = this.#held(wanted);
    }
    if (held) {
      // Joined: another call is making this operation right now.
      const joined = this.#starting.has(held.idempotencyKey) || this.#inflight.has(held.idempotencyKey);
      await this.#storing.get(held.idempotencyKey);
      return { op: held, joined, staleJoin: byParams && this.#stale(held) };
    }
    const op = {
      operation: wanted.operation,
      params: structuredClone(wanted.params),
      idempotencyKey: wanted.idempotencyKey ?? this.#newKey(),
      startedAt: new Date(this.#clock.now()).toISOString(),
      sender: this.#id,
    } as PendingOperation;
    const key = op.idempotencyKey;
    const stored = Promise.resolve()
      .then(() => this.#storage.put(op))
      .then(
        () => {
          // The put replaced whatever storage held under the key, such as an
          // operation settled here whose removal failed: this one is live.
          this.#settledKeys.delete(key);
          this.#known.set(key, op);
          this.#own.add(key);
          this.#announce(op);
        },
        async (err: unknown) => {
          throw await this.#unstore(op, err);
        },
      )
      .finally(() => {
        this.#starting.delete(key);
        this.#storing.delete(key);
      });
    this.#starting.set(key, op);
    this.#storing.set(key, stored);
    this.#clean.add(key);
    await stored;
    return { op, joined: false, staleJoin: false };
  }

  // #announce calls onStored; should it throw, the call rejects with
  // pending: the operation is stored, not sent, and joined or resumed later.
  #announce(op: PendingOperation) {
    try {
      this.#onStored?.(structuredClone(op));
    } catch (err) {
      const e = new CMPayError(`onStored threw (${String(err)}): the operation is stored and was not sent`, {
        code: 'ON_STORED_FAILED',
        idempotencyKey: op.idempotencyKey,
        cause: err,
      });
      e.pending = true;
      throw e;
    }
  }

  // #unstore answers a put that failed: the write may have reached storage
  // anyway (a commit whose acknowledgement was lost), so the key is removed
  // before the caller hears "nothing was sent". When that fails too, the
  // operation stays known here as pending, unsent: a later call joins it and
  // resumePending() sends it if storage holds it.
  async #unstore(op: PendingOperation, err: unknown): Promise<StorageError> {
    const key = op.idempotencyKey;
    try {
      await this.#storage.remove(key);
    } catch (removeErr) {
      this.#known.set(key, op);
      this.#own.add(key);
      this.#clean.delete(key);
      const e = new StorageError(
        `could not store the idempotency key (${String(err)}) nor remove what the write may have left (${String(removeErr)}): ` +
          `it was not sent, and stays pending: call again with the same key${this.#join ? ' (or parameters)' : ''}, or resumePending()`,
        { code: 'STORAGE_FAILED', idempotencyKey: key, cause: err },
      );
      e.pending = true;
      return e;
    }
    // The cause's text (a full quota, a browser that refuses storage) in the
    // message: it is what the developer has to fix, and the only part a log shows.
    return new StorageError(
      `could not store the idempotency key (${String(err)}); nothing was sent: try again once storage accepts writes, or give the client another storage`,
      { code: 'STORAGE_FAILED', idempotencyKey: key, cause: err },
    );
  }

  // #held finds the operation a call must join: the one stored, or being
  // stored, under the caller's key (refusing other parameters under it), or
  // without a caller's key, when joining by parameters, one with the same
  // parameters. A stale one is joined too: #send looks it up before sending
  // anything, and answers what was made under it as a replay, or sends it
  // renewed as this call; left stored, it would be made after this call's.
  #held(wanted: Omit<PendingOperation, 'startedAt' | 'idempotencyKey'> & { idempotencyKey?: string }) {
    const all = [...this.#known.values(), ...this.#starting.values()];
    if (wanted.idempotencyKey === undefined) {
      if (!this.#join) return undefined;
      return all.find((op) => differingFields(op, wanted).length === 0);
    }
    const held = all.find((op) => op.idempotencyKey === wanted.idempotencyKey);
    const differ = held ? differingFields(held, wanted) : [];
    if (differ.length > 0) {
      throw new KeyReusedError(
        `idempotency key ${JSON.stringify(wanted.idempotencyKey)} is stored for another ${differ.join(', ')}; nothing was sent: ` +
          'use a new key for a new request, or the stored parameters to finish the stored one (pending())',
        { code: 'IDEMPOTENCY_KEY_REUSED', differingFields: differ, local: true, idempotencyKey: wanted.idempotencyKey },
      );
    }
    return held;
  }

  // #mine says whether this client stored the operation under key, or is
  // making it right now.
  #mine(key: string): boolean {
    return this.#own.has(key) || this.#starting.has(key) || this.#inflight.has(key);
  }

  // #reload reads storage again into #known; nothing is sent when it fails.
  async #reload() {
    let loaded: PendingOperation[];
    try {
      loaded = await this.#storage.load();
    } catch (err) {
      throw loadFailed(err);
    }
    this.#sync(this.#live(loaded));
  }

  // #execute sends op, or joins the request loop already sending it. The
  // loop stops only once every caller sharing it has aborted: a caller whose
  // signal fires while others still wait gets its AbortedError at once, and
  // the others their answer. A caller that comes once every earlier one
  // aborted gets the answer the stopped loop may still have had, else a new
  // loop, started once the old one ended.
  #execute(op: PendingOperation, signal?: AbortSignal): Promise<PaymentResult> {
    const key = op.idempotencyKey;
    let f = this.#inflight.get(key);
    if (!f || f.stop.signal.aborted) {
      const stop = new AbortController();
      const send = () => this.#claim(op).then((claimed) => this.#send(claimed, stop.signal));
      const base = f
        ? f.done.catch((err: unknown) => {
            if (err instanceof AbortedError) return send();
            throw err;
          })
        : send();
      const flight = { stop, callers: 0, aborted: 0 } as Flight;
      flight.done = base.finally(() => {
        if (this.#inflight.get(key) === flight) this.#inflight.delete(key);
      });
      this.#inflight.set(key, flight);
      f = flight;
    }
    return this.#attend(f, key, signal);
  }

  #attend(f: Flight, key: string, signal?: AbortSignal): Promise<PaymentResult> {
    f.callers++;
    if (!signal) return f.done;
    return new Promise<PaymentResult>((resolve, reject) => {
      const leave = () => {
        if (++f.aborted === f.callers) {
          f.stop.abort(signal.reason);
          return; // the loop's own AbortedError answers this last caller
        }
        const e = aborted(signal, undefined);
        e.idempotencyKey = key;
        e.pending = true;
        reject(e);
      };
      if (signal.aborted) leave();
      else signal.addEventListener('abort', leave, { once: true });
      f.done.then(resolve, reject).finally(() => signal.removeEventListener('abort', leave));
    });
  }

  // #claim names this client as the sender of an operation another client
  // stored before sending it, so that the other client, answered with a
  // refusal, knows a try of this one may have applied it (#onlySender).
  // Nothing is sent when that put fails. Once another client sent it, this
  // one can never prove it unapplied, even after naming itself again: its
  // key leaves #clean for good.
  async #claim(op: PendingOperation): Promise<PendingOperation> {
    if (op.sender === undefined || op.sender === this.#id) return op;
    this.#clean.delete(op.idempotencyKey);
    const claimed = { ...op, sender: this.#id } as PendingOperation;
    try {
      await this.#storage.put(claimed);
    } catch (err) {
      const e = new StorageError(`could not mark the stored operation as sent by this client: ${String(err)}; it was not sent`, {
        code: 'STORAGE_FAILED',
        idempotencyKey: op.idempotencyKey,
        cause: err,
      });
      e.pending = true;
      throw e;
    }
    if (this.#known.has(op.idempotencyKey)) this.#known.set(op.idempotencyKey, claimed);
    return claimed;
  }

  // #send sends op until it has an answer, first looking up what was made
  // under its key when the server may have forgotten it (stale).
  async #send(op: PendingOperation, signal?: AbortSignal): Promise<PaymentResult> {
    const field = documents[op.operation].field;
    let verdict: Answer | 'stale';
    try {
      verdict = this.#stale(op) ? 'stale' : await this.#request(requestFor(op), field, { signal, op });
      if (verdict === 'stale') return await this.#lookThenSend(op, signal);
    } catch (err) {
      if (err instanceof CMPayError && this.#known.has(op.idempotencyKey)) {
        err.idempotencyKey = op.idempotencyKey;
        err.pending = true;
      }
      throw err;
    }
    if (verdict.kind === 'final') {
      verdict.error.idempotencyKey = op.idempotencyKey;
      if (await this.#judged(op, verdict)) await this.#settle(op);
      else verdict.error.pending = true;
      throw verdict.error;
    }
    return this.#answer(op, verdict.data as Record<string, unknown>);
  }

  // #judged says whether a final error lets op be forgotten. CMPay's codes
  // that judge the operation do, but NOT_FOUND on a capture, cancel or
  // refund: servers before contract v3's last fixes answered it for another
  // client's payment too (a token bound to another merchant; FORBIDDEN now).
  // That NOT_FOUND, like a refusal (401, 403, a proxy's 4xx), forgets op
  // only when this client is provably its only sender (#onlySender), so that
  // no try, here or in another client, can have applied it. A code CMPay
  // does not send never does (a gateway's timeout, after it forwarded the
  // request).
  async #judged(op: PendingOperation, v: Extract<Answer, { kind: 'final' }>): Promise<boolean> {
    const notFoundChange = v.error.code === 'NOT_FOUND' && op.operation !== 'CREATE_PAYMENT';
    if (v.settles && !notFoundChange) return true;
    if (!v.refusal && !notFoundChange) return false;
    return this.#onlySender(op);
  }

  // #onlySender says whether this client is provably op's only sender: every
  // try it made was answered without effect, and storage still names it as
  // the sender (another client sending op names itself first, #claim).
  async #onlySender(op: PendingOperation): Promise<boolean> {
    const key = op.idempotencyKey;
    if (!this.#clean.has(key)) return false;
    let stored: PendingOperation[];
    try {
      stored = await this.#storage.load();
    } catch {
      return false;
    }
    const now = stored.find((o) => o.idempotencyKey === key);
    return this.#clean.has(key) && (now === undefined || now.settled === true || now.sender === this.#id);
  }

  // #markSent records that a try of op leaves now. Near the time op turns
  // stale it is written to storage first (lastSentAt), so that whichever
  // client looks op up once stale knows a try may still be applied
  // (#inDoubtUntil); a try further from it is past doubt by then, and is not
  // worth a write. When that write fails, the try does not leave.
  // The time written is a little ahead (markSentAheadMs), and a write
  // that takes longer than that sends nothing: the try must never leave
  // later than the time others count from.
  async #markSent(op: PendingOperation): Promise<void> {
    const key = op.idempotencyKey;
    const now = this.#clock.now();
    this.#lastSent.set(key, now);
    if (now < this.#staleAt(op) - this.#inDoubtMs()) return;
    const leavesBy = now + markSentAheadMs;
    this.#lastSent.set(key, leavesBy);
    const marked = { ...(this.#known.get(key) ?? op), lastSentAt: new Date(leavesBy).toISOString() } as PendingOperation;
    let failure: unknown;
    try {
      await this.#storage.put(marked);
    } catch (err) {
      failure = err;
    }
    if (failure === undefined && this.#clock.now() > leavesBy) {
      failure = new Error(`the write took longer than ${markSentAheadMs} ms`);
    }
    if (failure !== undefined) {
      throw new StorageError(`could not record that the operation is being sent: ${String(failure)}; this try was not sent`, {
        code: 'STORAGE_FAILED',
        idempotencyKey: key,
        cause: failure,
      });
    }
    if (this.#known.has(key)) this.#known.set(key, marked);
  }

  // #inDoubtMs is how long after a try leaves the server may still apply
  // it: the try may take the whole attempt timeout to arrive, the server
  // keeps working on a request up to serverRequestBoundMs after it arrived,
  // its client gone or not, and a margin covers the hops in between.
  #inDoubtMs(): number {
    return this.#policy.attemptTimeoutMs + serverRequestBoundMs + inDoubtMarginMs;
  }

  // #inDoubtUntil is the time before which a try of op may still be applied
  // by the server: the last try's, as this client saw it leave or as storage
  // recorded it (another process's).
  #inDoubtUntil(op: PendingOperation): number {
    const key = op.idempotencyKey;
    const sent = [this.#lastSent.get(key), op.lastSentAt, this.#known.get(key)?.lastSentAt]
      .map((t) => (typeof t === 'string' ? Date.parse(t) : t))
      .filter((t): t is number => t !== undefined && !Number.isNaN(t));
    return sent.length === 0 ? -Infinity : Math.max(...sent) + this.#inDoubtMs();
  }

  // #stale says whether the server may have forgotten op's key: it was
  // stored more than the key TTL less a tenth ago (or when is unreadable).
  #stale(op: PendingOperation): boolean {
    return !(this.#clock.now() < this.#staleAt(op));
  }

  // #staleAt is when op turns stale: the key TTL less a tenth (room for
  // clock changes) after it was stored; NaN when startedAt is unreadable.
  #staleAt(op: PendingOperation): number {
    return Date.parse(op.startedAt) + this.#ttlMs - this.#ttlMs / 10;
  }

  // #lookThenSend settles a stale op from what was made under its key, as a
  // replay would. When nothing was, a create, capture or cancel is sent under
  // the same key, its startedAt renewed in storage first (a second capture or
  // cancel of one payment is refused by its status); a refund never is: see
  // ExpiredOperationError. When the lookup fails, op stays stored and is not
  // sent: the server may have forgotten its key, and only a lookup tells an
  // operation made from one nobody made.
  async #lookThenSend(op: PendingOperation, signal?: AbortSignal): Promise<PaymentResult> {
    let found: Record<string, unknown> | null;
    try {
      found = await this.#lookup(op, signal);
    } catch (err) {
      // Final: the key made another payment, the processor refused the
      // capture or cancel. A payment not found may be another client's
      // (the token's binding): op stays stored.
      if (err instanceof KeyReusedError || err instanceof ProcessorRefusedError) {
        await this.#settle(op);
        throw err;
      }
      throw lookupFailed(op, err);
    }
    if (found) return this.#answer(op, found);
    if (op.operation === 'REFUND_PAYMENT') {
      const until = this.#inDoubtUntil(op);
      if (this.#clock.now() < until) {
        // A try that left near the stale margin may still be committed by
        // the server: "nothing was done" could be false, so op stays.
        const e = inconclusive(
          op,
          `no refund was made under its key yet, but a try sent since may still be applied until ${new Date(until).toISOString()}: ` +
            'it stays stored and is looked up again by resumePending()',
        );
        e.pending = true;
        throw e;
      }
      await this.#settle(op);
      throw new ExpiredOperationError(
        `the refund stored at ${op.startedAt} is older than nine tenths of the key TTL (idempotencyKeyTTL) and no refund was made under its key: ` +
          'it was not sent again, nothing was done; refund again if it is still wanted',
        { code: 'OPERATION_EXPIRED', idempotencyKey: op.idempotencyKey, operation: op.operation, startedAt: op.startedAt },
      );
    }
    const renewed = { ...op, startedAt: new Date(this.#clock.now()).toISOString(), sender: this.#id } as PendingOperation;
    try {
      await this.#storage.put(renewed);
    } catch (err) {
      throw new StorageError('could not store the renewed operation; nothing was sent', { code: 'STORAGE_FAILED', idempotencyKey: op.idempotencyKey, cause: err });
    }
    this.#known.set(renewed.idempotencyKey, renewed);
    return this.#send(renewed, signal);
  }

  // #lookup reads what was made under a stale operation's key, as the
  // mutation's payload would carry it (replayed), or null when nothing was.
  // It throws what a replay would answer when that is final (KeyReusedError,
  // NotFoundError, ProcessorRefusedError), and LOOKUP_INCONCLUSIVE when the
  // read cannot tell.
  async #lookup(op: PendingOperation, signal?: AbortSignal): Promise<Record<string, unknown> | null> {
    if (op.operation === 'CREATE_PAYMENT') return this.#lookupCreate(op, signal);
    const key = op.idempotencyKey;
    const req = { query: PaymentAttemptsDocument.toString(), operationName: 'PaymentAttempts', variables: { id: op.params.paymentId } };
    const p = (await this.#query(req, 'payment', signal, true)) as
      | (Payment & { attempts: Array<{ operation: string; idempotencyKey: string; outcome: string }> })
      | null;
    if (!p) throw new NotFoundError(`no payment ${op.params.paymentId}`, { code: 'NOT_FOUND', idempotencyKey: key });
    const { attempts, ...payment } = p;
    if (op.operation === 'REFUND_PAYMENT') {
      // A key the server forgot can have been used again: a refund made
      // under it long before op was stored is another's (madeBy).
      const refund = payment.refunds.find((r) => r.idempotencyKey === key && madeBy(op, r.createdAt, this.#ttlMs));
      if (refund) {
        const differ = refundDiffers(op.params, refund);
        if (differ.length === 0) return { refund, payment, replayed: true };
        throw new KeyReusedError(`idempotency key ${JSON.stringify(key)} was used for another refund (${differ.join(', ')}) of payment ${payment.id}`, {
          code: 'IDEMPOTENCY_KEY_REUSED',
          idempotencyKey: key,
          differingFields: differ,
          paymentId: payment.id,
        });
      }
      if ((payment.refundCount ?? 0) > payment.refunds.length) {
        throw inconclusive(op, `the payment has ${payment.refundCount} refunds and the answer listed ${payment.refunds.length}`);
      }
      return null;
    }
    // The newest attempts only (last: 100 in PaymentAttempts), within the
    // server's list budget. A capture or cancel older than them is sent again
    // under its key: the server replays it, or, having forgotten the key,
    // the payment's status refuses a second one.
    const applied = attempts.some(
      (a) => a.idempotencyKey === key && a.operation === op.operation && (a.outcome === 'APPLIED' || a.outcome === 'REPLAYED'),
    );
    if (!applied) return null;
    // The server keeps a refused capture's or cancel's attempt APPLIED with
    // nothing pending: only the payment's state shows the change was made.
    const effect = op.operation === 'CAPTURE_PAYMENT' ? capturedStatuses.has(payment.status) : payment.status === 'CANCELED';
    if (effect || payment.pendingOperation === op.operation) return { payment, replayed: true };
    throw new ProcessorRefusedError(
      `the processor refused the ${op.operation === 'CAPTURE_PAYMENT' ? 'capture' : 'cancel'} made under key ${JSON.stringify(key)}: ` +
        `the payment is ${payment.status}; nothing was applied`,
      { code: 'PROCESSOR_REFUSED', processorCode: null, idempotencyKey: key },
    );
  }

  // #lookupCreate finds the payment made under a create's client and key.
  // The server binds a key to the payment it made first, so the payment
  // found is the operation's unless the caller's own key was used for
  // another payment (after the server forgot it): compared by the fields a
  // payment shows, as the server compares them. A payment made long before
  // op was stored is an older operation's under the key reused, equal or
  // not (madeBy), and does not count.
  async #lookupCreate(op: PendingOperation & { operation: 'CREATE_PAYMENT' }, signal?: AbortSignal): Promise<Record<string, unknown> | null> {
    const key = op.idempotencyKey;
    const clientId = canonicalClientId(op.params.clientId) ?? '';
    // The server stores no text with a NUL (and refuses a filter with one):
    // nothing can have been made, and sending it gets the server's refusal.
    if (clientId.includes('\u0000') || key.includes('\u0000')) return null;
    const variables = { clientId, idempotencyKey: key };
    const req = { query: PaymentsByKeyDocument.toString(), operationName: 'PaymentsByKey', variables };
    const data = (await this.#query(req, 'payments', signal)) as {
      edges: Array<{ node: Payment }>;
      pageInfo?: { hasNextPage: boolean };
    };
    const made = data.edges
      .map((e) => e.node)
      .filter((p) => madeBy(op, p.createdAt, this.#ttlMs))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    const same = made.find((p) => createDiffers(op.params, p).length === 0);
    if (same) return { payment: same, replayed: true };
    if (data.pageInfo?.hasNextPage) {
      throw inconclusive(op, `more payments were made under its key than one answer lists, and none of those listed is this one`);
    }
    if (made.length === 0) return null;
    throw new KeyReusedError(`idempotency key ${JSON.stringify(key)} was used for another payment`, {
      code: 'IDEMPOTENCY_KEY_REUSED',
      idempotencyKey: key,
      differingFields: createDiffers(op.params, made[0]),
      paymentId: made[0].id,
    });
  }

  // #query sends a read, retried like the mutations; a final error is thrown as it is.
  async #query(req: GraphQLRequest, field: string, signal?: AbortSignal, nullable = false): Promise<unknown> {
    const verdict = await this.#request(req, field, { signal, nullable });
    if (verdict.kind === 'final') throw verdict.error;
    return verdict.data;
  }

  // #answer reads a payload: PROCESSING and PENDING are answers, not errors;
  // DECLINED and a FAILED refund are final errors.
  async #answer(op: PendingOperation, data: Record<string, unknown>): Promise<PaymentResult> {
    const payment = data.payment as Payment;
    const refund = data.refund as Refund | undefined;
    const base = { code: '', idempotencyKey: op.idempotencyKey };
    if (op.operation === 'CREATE_PAYMENT' && payment.status === 'DECLINED') {
      await this.#settle(op);
      throw new DeclinedError(`the processor declined the payment (${payment.declineCode ?? 'no code'})`, {
        ...base,
        code: 'PAYMENT_DECLINED',
        declineCode: payment.declineCode ?? null,
        payment,
      });
    }
    if (refund?.status === 'FAILED') {
      await this.#settle(op);
      throw new RefundFailedError(`the processor failed the refund (${refund.failureCode ?? 'no code'})`, {
        ...base,
        code: 'REFUND_FAILED',
        refund,
        payment,
      });
    }
    let settled: boolean;
    if (op.operation === 'CREATE_PAYMENT') settled = payment.status !== 'PROCESSING';
    else if (op.operation === 'REFUND_PAYMENT') settled = refund?.status !== 'PROCESSING';
    else settled = !payment.pendingOperation;
    if (settled) await this.#settle(op);
    return { ...(data as object), payment, replayed: data.replayed === true, idempotencyKey: op.idempotencyKey, settled } as PaymentResult;
  }

  // #settle forgets an operation that has its final answer; the caller gets
  // the answer whatever storage does (#forget).
  async #settle(op: PendingOperation) {
    this.#drop(op.idempotencyKey);
    this.#settledKeys.set(op.idempotencyKey, op.startedAt);
    await this.#forget(op);
  }

  // #forget removes a settled operation from storage. Should the removal
  // fail, a tombstone (settled: true, no parameters) takes its place, which
  // every client's load, join and resume skip and resumePending() removes:
  // sent again, a refusal that left the key unused (PAYMENT_STATE_CONFLICT,
  // a 401 no try got past) would be applied. Should that write fail too,
  // only this client knows (#settledKeys), and its resumePending() tries
  // again.
  async #forget(op: PendingOperation) {
    const key = op.idempotencyKey;
    try {
      await this.#storage.remove(key);
    } catch {
      try {
        await this.#storage.put(tombstone(op));
      } catch {
        return;
      }
    }
    this.#settledKeys.delete(key);
    this.#tellSettled(op);
  }

  // #tellSettled calls onSettled, whose throw or rejection never changes the
  // answer: the operation was made and its key is gone, so an error here
  // would have the caller pay again.
  #tellSettled(op: PendingOperation) {
    const warn = (err: unknown) => console.warn(`CMPayClient: onSettled threw for key ${JSON.stringify(op.idempotencyKey)}; the answer stands:`, err);
    try {
      const r = this.#onSettled?.(structuredClone(op));
      if (r && typeof (r as Promise<void>).then === 'function') (r as Promise<void>).then(undefined, warn);
    } catch (err) {
      warn(err);
    }
  }

  // #live drops what a client must neither join nor send from a load:
  // tombstones (#forget) and what this client settled.
  #live(ops: PendingOperation[]): PendingOperation[] {
    return ops.filter((op) => op.settled !== true && !this.#settledHere(op));
  }

  // #settledHere says whether op is the very operation this client settled
  // under its key and failed to remove: a later one stored under the key
  // (another startedAt) may have been applied, and is kept.
  #settledHere(op: PendingOperation): boolean {
    return this.#settledKeys.get(op.idempotencyKey) === op.startedAt;
  }

  // #request sends req until an answer is final or carries data, waiting
  // between tries as the policy says. It throws UnavailableError when the
  // tries run out and AbortedError when signal fires. With op, it answers
  // 'stale' instead of a try once op's key may be forgotten, records when
  // each try of op leaves (#markSent), and marks op unclean at its first try
  // without an answer that proves nothing applied.
  async #request(req: GraphQLRequest, field: string, o: RequestOptions): Promise<Answer>;
  async #request(req: GraphQLRequest, field: string, o: RequestOptions & { op: PendingOperation }): Promise<Answer | 'stale'>;
  async #request(req: GraphQLRequest, field: string, o: RequestOptions & { op?: PendingOperation }): Promise<Answer | 'stale'> {
    const { signal, nullable = false, op } = o;
    const p = this.#policy;
    let last: CMPayError | undefined;
    let attempt = 0;
    while (attempt < p.maxAttempts) {
      attempt++;
      if (signal?.aborted) throw aborted(signal, last);
      if (op && attempt > 1 && this.#stale(op)) return 'stale';
      if (op) await this.#markSent(op);
      let verdict: Verdict;
      const timeout = new AbortController();
      const timer = setTimeout(() => timeout.abort(new Error('timeout')), p.attemptTimeoutMs);
      try {
        const res = await this.#transport(req, anySignal([signal, timeout.signal]));
        verdict = judge(res, field, this.#clock.now(), nullable);
      } catch (err) {
        if (op) this.#clean.delete(op.idempotencyKey);
        if (signal?.aborted) throw aborted(signal, err);
        const timedOut = timeout.signal.aborted;
        verdict = {
          kind: 'retry',
          retryAfterMs: null,
          error: new CMPayError(timedOut ? `no answer within ${p.attemptTimeoutMs} ms` : `network error: ${String(err)}`, {
            code: timedOut ? 'TIMEOUT' : 'NETWORK_ERROR',
            retryable: true,
            cause: err,
          }),
        };
      } finally {
        clearTimeout(timer);
      }
      if (op && verdict.kind !== 'final') this.#clean.delete(op.idempotencyKey);
      if (verdict.kind !== 'retry') return verdict;
      last = verdict.error;
      if (attempt >= p.maxAttempts) break;
      const after = verdict.retryAfterMs;
      if (after !== null && after > p.maxRetryAfterMs) break;
      try {
        await this.#clock.sleep(Math.max(after ?? 0, backoffDelay(attempt, p, this.#random)), signal);
      } catch (err) {
        throw aborted(signal, err);
      }
    }
    throw new UnavailableError(`no final answer after ${attempt} tries: ${last?.message ?? 'unknown'}`, {
      code: last?.code ?? 'UNAVAILABLE',
      attempts: attempt,
      httpStatus: last?.httpStatus,
      extensions: last?.extensions,
      cause: last,
    });
  }

  /** The payment with this id, or null when there is none. Retried like the mutations; nothing is stored. */
  async getPayment(id: string, opts: { signal?: AbortSignal } = {}): Promise<Payment | null> {
    const req = { query: PaymentDocument.toString(), operationName: 'Payment', variables: { id } };
    return (await this.#query(req, 'payment', opts.signal, true)) as Payment | null;
  }

  /**
   * Yields the payment as it is now, then again each time it may have
   * changed: on each of its events (WebSocket, or SSE), and every
   * pollIntervalMs in case an event was missed while the subscription was
   * (re)connecting; by reading alone once the token was refused a
   * subscription (onEventsRefused). Stop by breaking out of the loop or with
   * signal.
   */
  async *watchPayment(paymentId: string, opts: { signal?: AbortSignal } = {}): AsyncGenerator<Payment> {
    await this.ready;
    const stop = new AbortController();
    const signal = anySignal([opts.signal, stop.signal]);
    let wake: (() => void) | undefined;
    let dirty = false;
    const poke = () => {
      dirty = true;
      wake?.();
    };
    const followed = this.#follow(paymentId, poke, signal);
    try {
      for (;;) {
        dirty = false;
        const p = await this.getPayment(paymentId, { signal });
        if (!p) throw new NotFoundError(`no payment ${paymentId}`, { code: 'NOT_FOUND' });
        yield p;
        if (!dirty) {
          const woken = new Promise<void>((resolve) => (wake = resolve));
          await Promise.race([woken, this.#clock.sleep(this.#pollIntervalMs, signal).catch(() => undefined)]);
          wake = undefined;
        }
        if (signal.aborted) throw aborted(signal, undefined);
      }
    } finally {
      stop.abort(new Error('watch ended'));
      await followed;
    }
  }

  // #follow keeps a subscription to the payment's events open until signal
  // fires, reconnecting with backoff, and pokes on each event and after each
  // reconnection (an event may have passed while it was down). It stops for
  // good once the token is refused (#refuseEvents): the watch polls alone.
  async #follow(paymentId: string, poke: () => void, signal: AbortSignal) {
    const req = { query: PaymentEventsDocument.toString(), operationName: 'PaymentEvents', variables: { paymentId } };
    let failures = 0;
    while (!signal.aborted && !this.#eventsRefused) {
      const it = this.#subscriber(req);
      const close = () => void it.return?.(undefined);
      signal.addEventListener('abort', close, { once: true });
      try {
        for (;;) {
          const r = await it.next();
          if (r.done) break;
          if (r.value.errors?.length) throw r.value.errors;
          failures = 0;
          poke();
        }
      } catch (err) {
        failures++;
        void it.return?.(undefined);
        const refused = subscriptionRefused(err);
        if (refused) this.#refuseEvents(refused);
      } finally {
        signal.removeEventListener('abort', close);
      }
      if (signal.aborted || this.#eventsRefused) return;
      poke();
      await this.#clock.sleep(backoffDelay(Math.max(failures, 1), this.#policy, this.#random), signal).catch(() => undefined);
    }
  }

  // #refuseEvents records that the token may not subscribe and tells
  // onEventsRefused, the first time only: watches running at once may each
  // have been refused.
  #refuseEvents(err: AuthError) {
    if (this.#eventsRefused) return;
    this.#eventsRefused = err;
    try {
      this.#onEventsRefused?.(err);
    } catch (e) {
      console.warn('CMPayClient: onEventsRefused threw; the client polls all the same:', e);
    }
  }

  /**
   * Waits until the payment has nothing in flight: not PROCESSING or PENDING,
   * no capture or cancel waiting for the processor, no refund PROCESSING.
   * Resolves to the payment as it is then, and forgets the stored operations
   * that state settles. Throws WaitTimeoutError after timeoutMs.
   */
  async waitForSettled(paymentId: string, opts: WaitOptions = {}): Promise<Payment> {
    const timeoutMs = opts.timeoutMs ?? 120_000;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new Error('timeout')), timeoutMs);
    let last: Payment | undefined;
    try {
      for await (const p of this.watchPayment(paymentId, { signal: anySignal([opts.signal, timeout.signal]) })) {
        last = p;
        if (isSettled(p)) {
          await this.#settleBy(p);
          return p;
        }
      }
    } catch (err) {
      if (timeout.signal.aborted && !opts.signal?.aborted) {
        throw new WaitTimeoutError(`payment ${paymentId} did not settle within ${timeoutMs} ms`, {
          code: 'WAIT_TIMEOUT',
          payment: last,
          cause: err,
        });
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
    throw new CMPayError('the payment watch ended', { code: 'CLIENT_ERROR' });
  }

  // #settleBy forgets the stored operations a settled payment proves
  // finished: its create (the payment carries the key and the create's
  // parameters, and was made after it was stored, as #lookupCreate reads
  // it) and its refunds (each carries its key, and is the
  // operation's only if made after it was stored, with its parameters, as
  // #lookup reads it). A stored capture or cancel is left to
  // resumePending(): the payment does not show whether that request ever
  // reached the server.
  async #settleBy(p: Payment) {
    for (const op of this.#known.values()) {
      const done =
        (op.operation === 'CREATE_PAYMENT' &&
          op.idempotencyKey === p.idempotencyKey &&
          madeBy(op, p.createdAt, this.#ttlMs) &&
          createDiffers(op.params, p).length === 0) ||
        (op.operation === 'REFUND_PAYMENT' &&
          op.params.paymentId === p.id &&
          p.refunds.some((r) => r.idempotencyKey === op.idempotencyKey && madeBy(op, r.createdAt, this.#ttlMs) && refundDiffers(op.params, r).length === 0));
      if (done) await this.#settle(op);
    }
  }

  /** Closes the subscription connections this client opened. */
  async close(): Promise<void> {
    await this.#ownSubscriber?.close();
  }
}

/** A request loop for one key, shared by the callers that joined it (#execute). */
interface Flight {
  done: Promise<PaymentResult>;
  /** Aborts the loop: once every caller has aborted. */
  stop: AbortController;
  callers: number;
  aborted: number;
}

/** An answer #request returns: data, or a final error. */
type Answer = Exclude<Verdict, { kind: 'retry' }>;

interface RequestOptions {
  signal?: AbortSignal;
  /** A null field without errors is an answer (a query for a payment that does not exist). */
  nullable?: boolean;
}

// createDiffers names the fields by which a payment differs from a create's
// parameters, of those a payment shows (clientId, amount, currency, method),
// compared as the server compares them: client ids in NFC, amounts by value.
function createDiffers(params: CreatePaymentInput, p: Payment): string[] {
  const out: string[] = [];
  if (canonicalClientId(params.clientId) !== canonicalClientId(p.clientId)) out.push('clientId');
  if (canonicalAmount(params.amount) !== canonicalAmount(p.amount)) out.push('amount');
  if (canonicalCurrency(params.currency) !== p.currency) out.push('currency');
  if (params.method !== p.method) out.push('method');
  return out;
}

// tombstone is what stands in storage for a settled operation whose
// removal failed: its kind, key and start, none of its parameters. A
// payment method token (pm_…), amounts or a reason would otherwise stay on
// the device until the next resumePending(). Nothing reads them: the key
// reuse check compares live operations only (#live), and the server checks
// a key sent again against what it made under it.
function tombstone(op: PendingOperation): PendingOperation {
  const { operation, idempotencyKey, startedAt } = op;
  return { operation, idempotencyKey, startedAt, settled: true, params: {} } as unknown as PendingOperation;
}

// madeBy says whether a payment or refund found under op's key, made at
// createdAt, can be op's: made no earlier than half a key TTL before op was
// stored. One made under the same key by an older operation was made at
// least a whole server TTL before op's first send (the server replays a key
// it still holds), so half a TTL leaves the client's clock that much room
// ahead of the server's. An unreadable date never rules one out.
function madeBy(op: PendingOperation, createdAt: string, ttlMs: number): boolean {
  return !(Date.parse(createdAt) < Date.parse(op.startedAt) - ttlMs / 2);
}

// refundDiffers names the parameters by which a refund differs from a
// refund's: its amount by value, when one was asked for (omitted, it was all
// that was left then), and its reason exactly, as the server compares them.
function refundDiffers(params: RefundPaymentParams, r: Refund): string[] {
  const out: string[] = [];
  if (params.amount !== undefined && params.amount !== null && canonicalAmount(params.amount) !== canonicalAmount(r.amount)) out.push('amount');
  if ((params.reason ?? null) !== (r.reason ?? null)) out.push('reason');
  return out;
}

// serverRequestBoundMs is how long the server may work on a request after
// it arrived, its client gone or not: payments/engine.go's requestTimeout
// (15 s), which a capture, cancel or refund extends by PROCESSOR_TIMEOUT
// (payments/changes.go; 10 s unless the server's operator set more).
const serverRequestBoundMs = 25_000;

// resumedAnswerMs is how long an answer resumePending() settled is kept for
// the first equal call without a key. A shopper whose page reloaded
// mid-payment pays again within minutes of the reload; an equal payment
// made in a page open longer is more likely a purchase of its own, which
// the remembered answer would swallow.
const resumedAnswerMs = 15 * 60_000;

// inDoubtMarginMs covers what lies between a try leaving and the server's
// bound starting: proxies, a queue in front of the server.
const inDoubtMarginMs = 5_000;
// markSentAheadMs is how far ahead of its write a try's lastSentAt is
// dated: the most the write may take for the try to leave.
const markSentAheadMs = 1_000;

// The statuses a payment can have once captured.
const capturedStatuses: ReadonlySet<string> = new Set(['CAPTURED', 'PARTIALLY_REFUNDED', 'REFUNDED']);

// inconclusive is the error of a lookup whose answer cannot tell whether the
// operation was made.
function inconclusive(op: PendingOperation, why: string): CMPayError {
  return new CMPayError(`the lookup cannot tell whether the operation was made: ${why}`, {
    code: 'LOOKUP_INCONCLUSIVE',
    idempotencyKey: op.idempotencyKey,
  });
}

// lookupFailed says why a stale operation stays stored: its lookup failed,
// and it is not sent blindly, since the server may have forgotten its key.
function lookupFailed(op: PendingOperation, err: unknown): CMPayError {
  const e = err instanceof CMPayError ? err : new CMPayError(String(err), { code: 'CLIENT_ERROR', cause: err });
  e.message =
    `${op.operation} stored at ${op.startedAt} (older than nine tenths of the key TTL) could not be looked up, so it stays stored ` +
    `and was not sent again: ${e.message}`;
  e.idempotencyKey = op.idempotencyKey;
  e.pending = true;
  return e;
}

// loadFailed is the error of a load of the stored operations that failed,
// at start, in resumePending() or in a call that reads them again before
// it sends (#reload): nothing was sent.
function loadFailed(err: unknown): StorageError {
  return new StorageError(`could not load the stored operations: ${String(err)}; nothing was sent`, {
    code: 'STORAGE_LOAD_FAILED',
    cause: err,
  });
}

function aborted(signal: AbortSignal | undefined, cause: unknown): AbortedError {
  return new AbortedError(`aborted: ${String(signal?.reason ?? 'by the caller')}`, { code: 'ABORTED', cause, retryable: true });
}
