// Following a payment's events over the server's subscriptions: WebSocket
// (graphql-transport-ws) where the runtime has a WebSocket, Server-Sent
// Events (graphql-sse, distinct connections mode) otherwise, or once the
// WebSocket could not connect (a proxy that drops upgrades, say).
//
// Both libraries are imported when the first subscription opens, not when
// the client loads: graphql-sse's entry point pulls in graphql-js (for its
// server half): loading the client cost a Node process about 0.26 s of CPU
// with them and 0.06 s without (docs/benchmarks/2026-12-04-ts-client-load.md),
// and most processes that pay never subscribe.
import type { Client as WsClient } from 'graphql-ws/client';
import type { Client as SseClient } from 'graphql-sse';
import { AuthError, fromGraphQLError, type GraphQLErrorBody } from './errors.js';
import type { GraphQLRequest } from './transport.js';

/** One result of a subscription, as GraphQL sends it. */
export interface SubscriptionResult {
  data?: Record<string, unknown> | null;
  errors?: readonly GraphQLErrorBody[];
}

/**
 * Opens one subscription. The iterator ends, or throws, when the connection
 * ends; its return() closes the subscription. Unit tests pass a fake.
 */
export type Subscriber = (req: GraphQLRequest) => AsyncIterableIterator<SubscriptionResult>;

/**
 * subscriptionRefused says whether what a subscription threw is a refusal
 * of the token (FORBIDDEN or UNAUTHENTICATED), which no retry changes, and
 * answers it as an AuthError; anything else (the network, a 5xx,
 * TOO_MANY_SUBSCRIPTIONS, a WebSocket closed with 1013) is undefined, worth
 * trying again. It reads GraphQL errors (an operation refused over either
 * transport) and an HTTP 401 or 403 (graphql-sse's NetworkError carries the
 * response). A WebSocket closed with 4403 is not read as one: servers
 * before 2026-12-08 close so also when they could not check the token
 * (this one closes with 1013 then), and the next try goes over SSE, whose
 * HTTP status tells the two apart.
 */
export function subscriptionRefused(err: unknown): AuthError | undefined {
  if (Array.isArray(err)) {
    const e = (err as GraphQLErrorBody[]).find((x) => x?.extensions?.code === 'FORBIDDEN' || x?.extensions?.code === 'UNAUTHENTICATED');
    return e ? (fromGraphQLError(e) as AuthError) : undefined;
  }
  const status = (err as { response?: { status?: unknown } } | null)?.response?.status;
  if (status === 401 || status === 403) {
    return new AuthError(`the server refused the subscription with HTTP ${status}`, {
      code: status === 401 ? 'UNAUTHENTICATED' : 'FORBIDDEN',
      httpStatus: status,
      cause: err,
    });
  }
  return undefined;
}

/** Options of the default subscriber. */
export interface SubscriberOptions {
  /** The GraphQL endpoint (http or https); the WebSocket URL is derived from it. */
  url: string;
  token: string;
  /** A WebSocket class; default globalThis.WebSocket. Node.js 20 has none: pass the `ws` package's, or SSE is used. false: SSE only. */
  webSocketImpl?: unknown;
  /** fetch for SSE; default globalThis.fetch. */
  fetchFn?: typeof fetch;
}

/** The default subscriber, and how to close its connections. */
export interface DefaultSubscriber {
  subscribe: Subscriber;
  /** Which transport the next subscription uses. */
  transport(): 'websocket' | 'sse';
  close(): Promise<void>;
}

/**
 * defaultSubscriber subscribes over WebSocket while that works, and over SSE
 * from the first time a WebSocket connection fails (or from the start, when
 * there is no WebSocket).
 */
export function defaultSubscriber(o: SubscriberOptions): DefaultSubscriber {
  const webSocketImpl = o.webSocketImpl === false ? undefined : (o.webSocketImpl ?? (globalThis as { WebSocket?: unknown }).WebSocket);
  let useSse = webSocketImpl === undefined;
  let ws: Promise<WsClient> | undefined;
  let sse: Promise<SseClient> | undefined;
  const auth = `Bearer ${o.token}`;

  const wsClient = () =>
    (ws ??= import('graphql-ws/client').then(({ createClient }) =>
      createClient({
        url: o.url.replace(/^http/, 'ws'),
        webSocketImpl,
        connectionParams: { Authorization: auth },
        lazy: true,
        retryAttempts: 0,
      }),
    ));
  const sseClient = () =>
    (sse ??= import('graphql-sse').then(({ createClient }) =>
      createClient({
        url: o.url,
        headers: { Authorization: auth },
        retryAttempts: 0,
        fetchFn: o.fetchFn ?? globalThis.fetch.bind(globalThis),
      }),
    ));
  const dropWebSocket = () => {
    useSse = true;
    const old = ws;
    ws = undefined;
    void old?.then((c) => c.dispose());
  };

  // The library's iterators stop a pending next() when return() is called,
  // which a generator wrapped around them would not (its return() would
  // wait for the next event), so the wrapper is written by hand.
  const subscribe: Subscriber = (req) => {
    const overWebSocket = !useSse;
    let closed = false;
    let inner: Promise<AsyncIterableIterator<SubscriptionResult>> | undefined;
    const open = () =>
      (inner ??= (overWebSocket ? wsClient() : sseClient()).then(
        (c) => c.iterate(req) as AsyncIterableIterator<SubscriptionResult>,
      ));
    const it: AsyncIterableIterator<SubscriptionResult> = {
      next: async () => {
        if (closed) return { done: true, value: undefined };
        try {
          return await (await open()).next();
        } catch (err) {
          // graphql-ws throws an array of GraphQL errors for the operation,
          // and a CloseEvent, Event or Error when the connection itself
          // failed: only the latter sends later subscriptions to SSE.
          if (overWebSocket && !Array.isArray(err)) dropWebSocket();
          throw err;
        }
      },
      return: async (v?: unknown) => {
        closed = true;
        if (!inner) return { done: true, value: undefined };
        const i = await inner.catch(() => undefined);
        return (await i?.return?.(v)) ?? { done: true, value: undefined };
      },
      [Symbol.asyncIterator]: () => it,
    };
    return it;
  };

  return {
    subscribe,
    transport: () => (useSse ? 'sse' : 'websocket'),
    close: async () => {
      const [w, e] = [ws, sse];
      ws = undefined;
      sse = undefined;
      await (await w)?.dispose();
      (await e)?.dispose();
    },
  };
}
