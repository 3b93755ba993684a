// Runs the real Lambda@Edge handler (functions/edge/index.mjs) on what the Go test in
// this folder sends on stdin, {"events": {name: event}, "cases": [case]}, and prints
// {"events": {name: handler result}, "cases": {name: [[name, value], ...]}}.
// A case's headers become a CloudFront headers object (lower-case keys, each a list
// of {key, value}), exactly as CloudFront hands an origin response to the function.
import { handler } from '../../functions/edge/index.mjs';

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const input = JSON.parse(Buffer.concat(chunks).toString('utf8'));

const out = { events: {}, cases: {} };
for (const [name, event] of Object.entries(input.events ?? {})) {
  out.events[name] = await handler(event);
}
for (const c of input.cases ?? []) {
  const headers = {};
  for (const [key, value] of c.headers) {
    (headers[key.toLowerCase()] ??= []).push({ key, value });
  }
  const event = { Records: [{ cf: { config: { eventType: 'origin-response' }, request: {}, response: { status: '403', headers } } }] };
  const resp = await handler(event);
  const pairs = [];
  for (const list of Object.values(resp.headers)) {
    for (const h of list) pairs.push([h.key, h.value]);
  }
  out.cases[c.name] = pairs;
}
process.stdout.write(JSON.stringify(out));
