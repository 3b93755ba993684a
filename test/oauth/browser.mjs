// What a person does in a browser during an OAuth authorization, for the Node.js
// client scripts of test/oauth: Debian's chromium driven by playwright-core (never a
// browser playwright downloads), a fresh profile per launch, and the redirect
// listener the Go test made and handed over as a file descriptor.
//
// The pages are found and driven by accessible name only, as the page contract
// promises: the dev sign-in page has one button per member named after the user id,
// the consent page one checkbox per scope labelled with the scope name, a chooser
// labelled "Workspace" when there are several, and the buttons "Allow" and "Deny".
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

// The flags checked on this kind of machine (docs: /work/shared/NOTES.md, "Browser").
// playwright-core adds --headless and --user-data-dir itself.
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// The window of a laptop a person answers the consent page on: what they see
// without scrolling is what a consent entry's buttons are checked against.
export const VIEWPORT = { width: 1280, height: 800 };

// How long one page may take to answer; far above what a loopback server needs, so
// that a stuck page fails with its own text instead of a bare timeout.
const STEP_MS = 20_000;

// launchBrowser starts chromium with a profile of its own in a new temporary
// directory, with FLAGS and extraArgs; close() stops it and removes the profile.
export async function launchBrowser(extraArgs = []) {
  const dir = await mkdtemp(join(tmpdir(), 'aacmcp-chromium-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: process.env.AACMCP_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [...FLAGS, ...extraArgs],
    viewport: VIEWPORT,
  });
  context.setDefaultTimeout(STEP_MS);
  return {
    context,
    async close() {
      await context.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

// redirectListener serves the OAuth redirect URI on the listener the Go test handed
// over (AACMCP_REDIRECT_FD). expect() returns a promise of the query of the next
// request to /callback.
export function redirectListener() {
  const base = new URL(process.env.AACMCP_REDIRECT_URL);
  let waiter = null;
  const server = http.createServer((req, res) => {
    const u = new URL(req.url, base);
    if (u.pathname !== base.pathname) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end('<!DOCTYPE html><html lang="en"><title>Done</title><p>Authorization finished: you can close this window.</p></html>');
    const w = waiter;
    waiter = null;
    w?.(u);
  });
  server.listen({ fd: Number(process.env.AACMCP_REDIRECT_FD) });
  return {
    url: base.href,
    expect() {
      return new Promise((resolve) => { waiter = resolve; });
    },
    close() {
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

// inView is where the button is on the page as it loaded (nothing scrolled), and
// whether it is there to be pressed: the whole of it inside the viewport, and the
// element at its centre is the button itself (nothing drawn over it).
async function inView(button) {
  return button.evaluate((b) => {
    const r = b.getBoundingClientRect();
    const top = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
    const inside = r.top >= 0 && r.left >= 0 && r.bottom <= window.innerHeight && r.right <= window.innerWidth;
    return { top: r.top, bottom: r.bottom, viewport: window.innerHeight, visible: inside && (top === b || b.contains(top)) };
  });
}

// clickAndLoad clicks and waits for the next page to finish loading.
async function clickAndLoad(page, locator) {
  const loaded = page.waitForEvent('load');
  await locator.click();
  await loaded;
}

// checkboxNames are the accessible names of the page's checkboxes among names (the
// scopes a consent page may offer); it fails when a checkbox has another name.
async function checkboxNames(page, names) {
  const found = [];
  for (const n of names) {
    if (await page.getByRole('checkbox', { name: n, exact: true }).count() > 0) found.push(n);
  }
  const total = await page.getByRole('checkbox').count();
  if (total !== found.length) {
    throw new Error(`the consent page has ${total} checkboxes, ${found.length} of them named after a scope (${found.join(' ')})`);
  }
  return found;
}

// authorize opens authUrl in a new tab of browser and does what answer says until
// the authorization server redirects to the redirect listener; it returns the
// redirect's query and what each consent page offered.
//
// answer:
//   user      the dev sign-in button to press (a user id)
//   login     {username, password}: the upstream provider's own login form
//   scopes    when set, exactly the scopes to tick on the consent page
//   workspace when set, the workspace to choose
//   deny      press Deny instead of Allow
//   allScopes every scope name a consent page may offer (to read its checkboxes)
export async function authorize(browser, redirect, authUrl, answer) {
  const page = await browser.context.newPage();
  const consents = [];
  const callback = redirect.expect();
  let done = null;
  callback.then((u) => { done = u; });
  try {
    await page.goto(String(authUrl), { waitUntil: 'load' });
    for (let step = 0; step < 8; step++) {
      if (done || page.url().startsWith(redirect.url)) {
        return { params: (await callback).searchParams, consents };
      }
      const allow = page.getByRole('button', { name: 'Allow', exact: true });
      if (await allow.count() > 0) {
        // First, before anything can scroll the page.
        const deny = page.getByRole('button', { name: 'Deny', exact: true });
        const buttons = { allow: await inView(allow), deny: await inView(deny) };
        const offered = await checkboxNames(page, answer.allScopes);
        const checked = [];
        for (const s of offered) {
          if (await page.getByRole('checkbox', { name: s, exact: true }).isChecked()) checked.push(s);
        }
        const chooser = page.getByLabel('Workspace', { exact: true });
        const workspaces = await chooser.count() > 0
          ? await chooser.locator('option').evaluateAll((os) => os.map((o) => o.value))
          : [];
        consents.push({ url: page.url(), offered, checked, workspaces, text: await page.locator('body').innerText(), buttons });
        if (answer.scopes) {
          for (const s of offered) {
            await page.getByRole('checkbox', { name: s, exact: true }).setChecked(answer.scopes.includes(s));
          }
        }
        if (answer.workspace) await chooser.selectOption(answer.workspace);
        await clickAndLoad(page, answer.deny ? deny : allow);
        continue;
      }
      if (answer.user) {
        const signIn = page.getByRole('button', { name: answer.user, exact: true });
        if (await signIn.count() > 0) {
          await clickAndLoad(page, signIn);
          continue;
        }
      }
      if (answer.login) {
        const username = page.getByLabel('Username');
        if (await username.count() > 0) {
          await username.fill(answer.login.username);
          await page.getByLabel('Password').fill(answer.login.password);
          await clickAndLoad(page, page.getByRole('button', { name: 'Login' }));
          continue;
        }
      }
      throw new Error(`unexpected page ${page.url()}: ${(await page.locator('body').innerText()).slice(0, 1500)}`);
    }
    throw new Error(`no redirect to ${redirect.url} after 8 pages (at ${page.url()})`);
  } finally {
    await page.close();
  }
}
