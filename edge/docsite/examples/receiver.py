# A receiver of the Partner API's webhooks: it verifies each delivery with
# the Standard Webhooks library, drops an event it has already handled, and
# answers 204 quickly.
#
#   pip install standardwebhooks
#   WEBHOOK_SECRET=whsec_... python3 receiver.py
import json
import os
from http.server import BaseHTTPRequestHandler, HTTPServer

from standardwebhooks import Webhook, WebhookVerificationError

wh = Webhook(os.environ["WEBHOOK_SECRET"])  # whsec_..., shown when you created the endpoint
seen = set()  # webhook-ids handled; keep them where you keep your copy


def apply(event):
    """Change your copy of the properties, as on Keeping in sync: store data
    by its id when created or updated and active, delete it otherwise."""
    print(event["id"], event["type"], event["data"]["id"], json.dumps(event["data"]["name"]), flush=True)


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        try:
            # Verify the raw body, before parsing it: verify returns it parsed.
            event = wh.verify(body, dict(self.headers))
        except WebhookVerificationError:
            self.send_response(400)
            self.end_headers()
            return
        webhook_id = self.headers["webhook-id"]  # at least once: a retry repeats the id
        if webhook_id not in seen:
            apply(event)
            seen.add(webhook_id)
        self.send_response(204)
        self.end_headers()


HTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8090"))), Receiver).serve_forever()
