// One person's sign-in and consent in Chromium, for a Go test that plays the OAuth
// client itself (its token requests are signed client assertions made in Go): opens
// AACMCP_AUTH_URL, signs in and answers the consent page as AACMCP_ANSWER says
// (browser.mjs's answer), and prints the query of the redirect that came back as
//   REDIRECT <query>
// Environment: AACMCP_AUTH_URL, AACMCP_ANSWER, AACMCP_SCOPES (JSON: every scope),
// and the redirect listener of flow.NodeScript.
import { authorize, launchBrowser, redirectListener } from './browser.mjs';

const answer = { ...JSON.parse(process.env.AACMCP_ANSWER), allScopes: JSON.parse(process.env.AACMCP_SCOPES) };
const redirect = redirectListener();
const browser = await launchBrowser();
try {
  const { params, consents } = await authorize(browser, redirect, process.env.AACMCP_AUTH_URL, answer);
  console.log(`CONSENTS ${consents.length}`);
  console.log(`REDIRECT ${params.toString()}`);
} finally {
  await browser.close();
  await redirect.close();
}
