// Runs graphql-http's server audit suite (the GraphQL over HTTP spec's
// MUST, SHOULD and MAY checks) against a running CMPay and prints the
// results as JSON, one object per audit: {id, name, status, reason}.
//
//   node audit.mjs http://127.0.0.1:8080/graphql   (token in AUDIT_TOKEN)
//
// The audits send no credentials of their own; every request gets the
// bearer token, as a real client's would.
import { auditServer } from "graphql-http";

const url = process.argv[2];
const token = process.env.AUDIT_TOKEN;
if (!url || !token) {
  console.error("usage: AUDIT_TOKEN=<token> node audit.mjs <graphql url>");
  process.exit(2);
}

const fetchFn = (input, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${token}`);
  return fetch(input, { ...init, headers });
};

const results = await auditServer({ url, fetchFn });
const out = [];
for (const r of results) {
  out.push({ id: r.id, name: r.name, status: r.status, reason: r.status === "ok" ? "" : r.reason });
}
console.log(JSON.stringify(out, null, 1));
