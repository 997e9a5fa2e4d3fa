// A receiver of the Partner API's webhooks: it verifies each delivery with
// the Standard Webhooks library, drops an event it has already handled, and
// answers 204 quickly.
//
//   npm install standardwebhooks
//   WEBHOOK_SECRET=whsec_... node receiver.mjs
import { createServer } from "node:http";
import { Webhook } from "standardwebhooks";

const wh = new Webhook(process.env.WEBHOOK_SECRET); // whsec_..., shown when you created the endpoint
const seen = new Set(); // webhook-ids handled; keep them where you keep your copy

// apply changes your copy of the properties, as on Keeping in sync: store
// data by its id when created or updated and active, delete it otherwise.
function apply(event) {
  console.log(event.id, event.type, event.data.id, JSON.stringify(event.data.name));
}

createServer((req, res) => {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    let event;
    try {
      // Verify the raw body, before parsing it: verify returns it parsed.
      event = wh.verify(body, req.headers);
    } catch {
      res.writeHead(400).end("invalid signature");
      return;
    }
    const id = req.headers["webhook-id"]; // at least once: a retry repeats the id
    if (!seen.has(id)) {
      apply(event);
      seen.add(id);
    }
    res.writeHead(204).end();
  });
}).listen(Number(process.env.PORT ?? 8090), "127.0.0.1");
