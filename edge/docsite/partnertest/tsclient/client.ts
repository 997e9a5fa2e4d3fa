// A partner's TypeScript client of the Partner API v1: its types are
// generated from docs/openapi.yaml by openapi-typescript (schema.d.ts, made
// by partnertest's TestTypeScriptClient), and it is type-checked with
// tsc --strict before it runs against the demo.
//
// usage: node client.js BASE_URL API_KEY
import type { paths } from "./schema";

declare const process: { argv: string[]; exitCode: number };

type Responses<P extends keyof paths> = paths[P]["get"]["responses"];
type JSONOf<R> = R extends { content: { "application/json": infer B } } ? B : never;
type ProblemOf<R> = R extends { content: { "application/problem+json": infer B } } ? B : never;

type PropertyList = JSONOf<Responses<"/properties">[200]>;
type PropertyResponse = JSONOf<Responses<"/properties/{propertyId}">[200]>;
type EventList = JSONOf<Responses<"/events">[200]>;
type EventsProblem = ProblemOf<Responses<"/events">[keyof Responses<"/events">]>;
type ListProblem = ProblemOf<Responses<"/properties">[keyof Responses<"/properties">]>;
type GetProblem = ProblemOf<Responses<"/properties/{propertyId}">[keyof Responses<"/properties/{propertyId}">]>;

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

async function main(): Promise<void> {
  const [base, key, unknownFrom] = process.argv.slice(2); // unknownFrom: an address no other test used
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
  console.log(JSON.stringify({ pages, properties: ids.length, total, events, errors: seen, mismatches }));
  process.exitCode = mismatches === 0 ? 0 : 1;
}

main().catch((e: unknown) => {
  console.log(`error: ${String(e)}`);
  process.exitCode = 2;
});
