// A partner's TypeScript client of the Partner API v1: its types are
// generated from docs/openapi.yaml by openapi-typescript (schema.d.ts, made
// by partnertest's TestTypeScriptClient), and it is type-checked with
// tsc --strict before it runs against the demo.
//
// usage: node client.js BASE_URL API_KEY UNKNOWN_FROM RECEIVER_URL
import type { paths } from "./schema";

declare const process: { argv: string[]; exitCode: number };

// Op is an operation's responses; paths without the method (the webhook
// endpoints' /enable has no get) have none.
type Op<P extends keyof paths, M extends "get" | "post" | "delete"> = paths[P][M] extends { responses: infer R } ? R : never;
type Responses<P extends keyof paths> = Op<P, "get">;
type JSONOf<R> = R extends { content: { "application/json": infer B } } ? B : never;
type ProblemOf<R> = R extends { content: { "application/problem+json": infer B } } ? B : never;

type PropertyList = JSONOf<Responses<"/properties">[200]>;
type PropertyResponse = JSONOf<Responses<"/properties/{propertyId}">[200]>;
type EventList = JSONOf<Responses<"/events">[200]>;
type EventsProblem = ProblemOf<Responses<"/events">[keyof Responses<"/events">]>;
type ListProblem = ProblemOf<Responses<"/properties">[keyof Responses<"/properties">]>;
type GetProblem = ProblemOf<Responses<"/properties/{propertyId}">[keyof Responses<"/properties/{propertyId}">]>;

// The webhook endpoints' operations (docs/contract.md section 26).
type EndpointCreated = JSONOf<Op<"/webhook-endpoints", "post">[201]>;
type EndpointCreate = paths["/webhook-endpoints"]["post"]["requestBody"]["content"]["application/json"];
type EndpointList = JSONOf<Op<"/webhook-endpoints", "get">[200]>;
type EndpointResponse = JSONOf<Op<"/webhook-endpoints/{endpointId}", "get">[200]>;
type EnabledResponse = JSONOf<Op<"/webhook-endpoints/{endpointId}/enable", "post">[200]>;
type EndpointProblem = ProblemOf<Op<"/webhook-endpoints/{endpointId}", "get">[404]>;
type ConflictProblem = ProblemOf<Op<"/webhook-endpoints", "post">[409]>;

// Narrowing on code narrows the whole problem: status becomes the literal of
// that code's response, so a partner's switch is checked by the compiler.
function advice(p: ListProblem | GetProblem | EventsProblem): string {
  switch (p.code) {
    case "EVENTS_CURSOR_EXPIRED": {
      const status: 410 = p.status;
      return `${status}: list again and follow the feed from the list's cursor`;
    }
    case "LIST_SNAPSHOT_EXPIRED": {
      const status: 410 = p.status;
      return `${status}: list again from page 1 without asOf`;
    }
    case "VALIDATION_FAILED": {
      const status: 422 = p.status;
      return `${status}: fix ${p.errors.map((e) => `${e.field} (${e.code})`).join(", ")}`;
    }
    case "PROPERTY_NOT_FOUND": {
      const status: 404 = p.status;
      return `${status}: no such property`;
    }
    case "INVALID_API_KEY":
    case "MISSING_AUTH_HEADER": {
      const status: 401 = p.status;
      return `${status}: check the API key`;
    }
    case "RATE_LIMITED": {
      const status: 429 = p.status;
      return `${status}: wait for Retry-After`;
    }
    default:
      return `${p.status}: ${p.code}`;
  }
}

// code is a union of literals, not string: comparing it with a code no
// response lists does not compile.
function neverACode(p: ListProblem): boolean {
  // @ts-expect-error "NOT_A_CODE" is not a code of any response of the list
  return p.code === "NOT_A_CODE";
}

let mismatches = 0;
function expect(what: string, ok: boolean): void {
  if (!ok) {
    mismatches++;
    console.log(`decode mismatch: ${what}`);
  }
}

function isProblem(b: unknown): b is ListProblem | GetProblem | EventsProblem {
  const p = b as Record<string, unknown>;
  return typeof p === "object" && p !== null && typeof p.code === "string" && typeof p.status === "number" &&
    Array.isArray(p.errors) && typeof p.type === "string" && typeof p.requestId === "string";
}

async function get(base: string, path: string, key: string, from = ""): Promise<{ status: number; body: unknown; type: string }> {
  const headers: Record<string, string> = { Authorization: `Bearer ${key}`, "User-Agent": "partnertest-ts/1.0" };
  if (from !== "") headers["X-Forwarded-For"] = from; // the demo trusts loopback's X-Forwarded-For
  const res = await fetch(base + path, { headers });
  return { status: res.status, body: await res.json(), type: res.headers.get("content-type") ?? "" };
}

async function send(base: string, method: "GET" | "POST" | "DELETE", path: string, key: string, body?: EndpointCreate):
  Promise<{ status: number; body: unknown; type: string; location: string }> {
  const headers: Record<string, string> = { Authorization: `Bearer ${key}`, "User-Agent": "partnertest-ts/1.0" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text === "" ? null : JSON.parse(text), type: res.headers.get("content-type") ?? "",
    location: res.headers.get("location") ?? "" };
}

// Narrowing the webhook routes' problems on code: the compiler knows each
// code's status.
function endpointAdvice(p: EndpointProblem | ConflictProblem): string {
  switch (p.code) {
    case "WEBHOOK_ENDPOINT_NOT_FOUND": {
      const status: 404 = p.status;
      return `${status}: no such endpoint of this key`;
    }
    case "WEBHOOK_ENDPOINT_EXISTS": {
      const status: 409 = p.status;
      return `${status}: this key has an endpoint with that url`;
    }
    case "WEBHOOK_ENDPOINT_LIMIT": {
      const status: 409 = p.status;
      return `${status}: delete an endpoint first`;
    }
  }
}

// webhooks manages one endpoint through the five operations: create (201,
// Location, the secret shown once) pointing at receiver, list and get
// (without the secret), enable while enabled (200, as it is), the same url
// again (409), delete (204), then get, enable and delete are 404. It
// returns each step's status, and the codes of the problems.
async function webhooks(base: string, key: string, receiver: string): Promise<Record<string, number | string>> {
  const seen: Record<string, number | string> = {};
  const url = `${receiver}/hook`;
  const c = await send(base, "POST", "/webhook-endpoints", key, { url, description: "partnertest's TypeScript receiver" });
  seen.create = c.status;
  const created = c.body as EndpointCreated;
  const id = created.data.id;
  expect(`create: ${c.status} ${JSON.stringify(c.body)}`, c.status === 201 && c.location === `/v1/webhook-endpoints/${id}` &&
    created.data.object === "webhook_endpoint" && created.data.url === url && created.data.status === "enabled" &&
    created.data.secret.startsWith("whsec_") && created.data.disabledReason === null && /^whe_[0-9a-z]{24}$/.test(id));
  const l = await send(base, "GET", "/webhook-endpoints", key);
  seen.list = l.status;
  const list = l.body as EndpointList;
  expect(`list: ${l.status} ${JSON.stringify(l.body)}`, l.status === 200 &&
    list.data.filter((e) => e.id === id && e.url === url && e.secret === undefined).length === 1 &&
    list.data.every((e) => e.secret === undefined));
  const g = await send(base, "GET", `/webhook-endpoints/${id}`, key);
  seen.get = g.status;
  const got = g.body as EndpointResponse;
  expect(`get: ${g.status} ${JSON.stringify(g.body)}`, g.status === 200 && got.data.id === id && got.data.secret === undefined &&
    got.data.createdAt === created.data.createdAt);
  const e = await send(base, "POST", `/webhook-endpoints/${id}/enable`, key);
  seen.enable = e.status;
  const enabled = e.body as EnabledResponse;
  expect(`enable: ${e.status} ${JSON.stringify(e.body)}`, e.status === 200 && enabled.data.id === id &&
    enabled.data.status === "enabled" && enabled.data.disabledReason === null && enabled.data.secret === undefined);
  const again = await send(base, "POST", "/webhook-endpoints", key, { url });
  const conflict = again.body as ConflictProblem;
  seen.again = `${again.status} ${conflict.code}`;
  expect(`the same url again: ${again.status}`, again.status === 409 && again.type.startsWith("application/problem+json") && isProblem(again.body));
  console.log(endpointAdvice(conflict));
  const d = await send(base, "DELETE", `/webhook-endpoints/${id}`, key);
  seen.delete = d.status;
  expect(`delete: ${d.status} ${JSON.stringify(d.body)}`, d.status === 204 && d.body === null);
  for (const [name, method, path] of [["get", "GET", `/webhook-endpoints/${id}`], ["enable", "POST", `/webhook-endpoints/${id}/enable`],
    ["delete", "DELETE", `/webhook-endpoints/${id}`]] as const) {
    const r = await send(base, method, path, key);
    const p = r.body as EndpointProblem;
    seen[`${name} after delete`] = `${r.status} ${p.code}`;
    expect(`${name} after delete: ${r.status}`, r.status === 404 && r.type.startsWith("application/problem+json") && isProblem(r.body) &&
      p.status === 404);
    console.log(endpointAdvice(p));
  }
  return seen;
}

async function main(): Promise<void> {
  // unknownFrom: an address no other test used; receiver: a loopback URL answering 2xx
  const [base, key, unknownFrom, receiver] = process.argv.slice(2);
  const perPage = 5;
  let pages = 0;
  const ids: string[] = [];
  let total = 0;
  let asOf = ""; // page 1's meta.events.next: the other pages are read from its snapshot
  for (let page = 1; ; page++) {
    const r = await get(base, `/properties?page=${page}&perPage=${perPage}${asOf === "" ? "" : `&asOf=${asOf}`}`, key);
    expect(`list page ${page}: status ${r.status}`, r.status === 200 && r.type.startsWith("application/json"));
    const list = r.body as PropertyList;
    expect("list shape", Array.isArray(list.data) && typeof list.meta.pagination.total === "number");
    pages++;
    if (page === 1) asOf = list.meta.events.next;
    expect(`page ${page}: total ${list.meta.pagination.total}`, page === 1 || list.meta.pagination.total === total);
    total = list.meta.pagination.total;
    for (const p of list.data) {
      expect(`property ${p.id}`, p.object === "property" && typeof p.name === "string" &&
        (p.code === null || typeof p.code === "string") && (p.status === "active" || p.status === "inactive"));
      ids.push(p.id);
    }
    if (list.data.length === 0 || ids.length >= total) break;
  }
  for (const id of ids) {
    const r = await get(base, `/properties/${id}`, key);
    const one = r.body as PropertyResponse;
    expect(`get ${id}`, r.status === 200 && one.data.id === id);
  }
  // The events feed, from its oldest event to its end, two at a time.
  let events = 0;
  let after = "";
  for (let pages = 0; pages < 1000; pages++) {
    const r = await get(base, `/events?limit=2${after === "" ? "" : `&after=${after}`}`, key);
    expect(`events page: status ${r.status}`, r.status === 200 && r.type.startsWith("application/json"));
    const page = r.body as EventList;
    for (const e of page.data) {
      const t: "property.created" | "property.updated" | "property.removed" = e.type;
      expect(`event ${e.id}`, e.object === "event" && e.id.startsWith("evt_") && typeof e.occurredAt === "string" &&
        ["property.created", "property.updated", "property.removed"].includes(t) && typeof e.data.id === "string");
      events++;
    }
    after = page.meta.events.next;
    if (!page.meta.events.hasMore) break;
  }
  const seen: Record<string, string> = {};
  const probes: Array<[string, string, number]> = [
    ["/properties/0c8ea9b2-6a5e-4d0a-9c7b-3f1e2d4a5b6c", key, 404],
    ["/properties?perPage=0", key, 422],
    ["/properties", "svc_live_NoSuchKeyNoSuchKeyNoSuchKey04", 401],
    ["/events?after=evt_00000000000000000000000000", key, 422],
    ["/properties?asOf=evt_00000000000000000000000000", key, 422],
  ];
  for (const [path, k, want] of probes) {
    const r = await get(base, path, k, want === 401 ? unknownFrom : "");
    expect(`${path}: status ${r.status}, want ${want}`, r.status === want && r.type.startsWith("application/problem+json"));
    if (!isProblem(r.body)) {
      expect(`${path}: not a problem`, false);
      continue;
    }
    const p = r.body;
    expect(`${path}: status field ${p.status}`, p.status === r.status);
    seen[path.startsWith("/events") ? `${want} after` : path.includes("asOf") ? `${want} asOf` : String(want)] = p.code;
    console.log(advice(p));
  }
  void neverACode;
  const hooks = await webhooks(base, key, receiver);
  console.log(JSON.stringify({ pages, properties: ids.length, total, events, errors: seen, webhooks: hooks, mismatches }));
  process.exitCode = mismatches === 0 ? 0 : 1;
}

main().catch((e: unknown) => {
  console.log(`error: ${String(e)}`);
  process.exitCode = 2;
});
