// How one GraphQL request reaches the server. The client's retry policy is
// written against this small interface, so unit tests replace it with a
// fake that answers what each test needs (test/fake-transport.ts).

/** One GraphQL request. */
export interface GraphQLRequest {
  query: string;
  variables: Record<string, unknown>;
  operationName: string;
}

/** What came back: the HTTP status, the headers the client reads, and the body parsed as JSON (undefined when it was not JSON). */
export interface TransportResponse {
  status: number;
  /** The Retry-After header, as sent; null when absent (or hidden from a browser by CORS). */
  retryAfter: string | null;
  body: unknown;
}

/**
 * Sends one request. It rejects when no answer came (the network failed, or
 * signal fired: the per-try timeout or the caller's abort), and resolves with
 * whatever answer came otherwise, whatever its status.
 */
export type Transport = (req: GraphQLRequest, signal: AbortSignal) => Promise<TransportResponse>;

/** fetchTransport sends requests with fetch (browsers, Node.js 18+): POST, JSON, bearer token. */
export function fetchTransport(url: string, token: string, fetchFn: typeof fetch = globalThis.fetch.bind(globalThis)): Transport {
  return async (req, signal) => {
    const res = await fetchFn(url, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${token}`,
        'Content-Type': 'application/json',
        Accept: 'application/graphql-response+json, application/json',
      },
      body: JSON.stringify(req),
      signal,
    });
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return { status: res.status, retryAfter: res.headers.get('Retry-After'), body };
  };
}
