// Verifies deliveries with the Standard Webhooks JavaScript reference
// library, as a partner's receiver written in JavaScript would.
// Usage: node verify.mjs DELIVERIES.json SECRET
// DELIVERIES.json: [{"headers": {"webhook-id": ...}, "body": "..."}, ...]
// Prints one line per delivery, "ok" or "fail: <the library's message>".
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { Webhook } = require("standardwebhooks");

const [file, secret] = process.argv.slice(2);
const wh = new Webhook(secret);
for (const d of JSON.parse(readFileSync(file, "utf8"))) {
  try {
    wh.verify(d.body, d.headers);
    console.log("ok");
  } catch (e) {
    console.log("fail: " + e.message);
  }
}
