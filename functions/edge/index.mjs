// The Lambda@Edge origin-response function of aacmcp's CloudFront front door
// (docs/decisions.md, "Challenges and discovery through API Gateway").
//
// API Gateway REST APIs rename a WWW-Authenticate header in a Lambda proxy answer to
// X-Amzn-Remapped-WWW-Authenticate, so the 401 and 403 challenges the MCP function
// writes would reach no OAuth client. CloudFront runs origin-response functions for
// error answers too (viewer-response functions and CloudFront Functions it does not
// run for an origin status of 400 or more), so this is where the name comes back.
//
// It must do exactly what restore in shared/gateway/frontdoor.go does (the stand-in
// `aacmcp gateway --front-door` runs that): move the remapped challenge back, every
// value in order, unless the origin set WWW-Authenticate itself, in which case the
// origin's own header wins and the remapped copy is dropped. events/cloudfront/cases.json
// is the one case table both implementations are tested against.
//
// Lambda@Edge takes no environment variables and no layers, so the file stands alone:
// no dependencies, nothing read at start.

// CloudFront gives header names in lower case as the map keys; each entry keeps the
// name as the origin spelled it in `key`.
const REMAPPED = 'x-amzn-remapped-www-authenticate';
const RESTORED = 'www-authenticate';
const RESTORED_NAME = 'WWW-Authenticate';

// restore changes the CloudFront headers object in place.
export function restore(headers) {
  const remapped = headers[REMAPPED];
  if (!Array.isArray(remapped) || remapped.length === 0) {
    return;
  }
  delete headers[REMAPPED];
  const own = headers[RESTORED];
  if (Array.isArray(own) && own.length > 0) {
    return;
  }
  headers[RESTORED] = remapped.map((h) => ({ key: RESTORED_NAME, value: String(h?.value ?? '') }));
}

// handler answers CloudFront's origin-response event with the response to send on.
// It does not throw on any shape of event: an error in an origin-response function
// becomes CloudFront's own 502, which would hide the origin's answer.
export async function handler(event) {
  const response = event?.Records?.[0]?.cf?.response;
  if (response?.headers) {
    restore(response.headers);
  }
  return response;
}
