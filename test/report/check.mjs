// Opens an audit report (AACMCP_REPORT, a file path) in Debian's chromium and prints
// what a person sees, as JSON on stdout: each section's saved query, table rows and
// charts, the headline totals, the fonts the page loaded, and every request the
// browser made. Then it checks that the page's CSP holds: an image and a fetch to
// AACMCP_PROBE_URL (a listener of the Go test) are added to the page and must be
// blocked, while the same image in a page without the CSP must reach it (the control).
// AACMCP_SCREENSHOT, when set, is where the screenshot of the page goes. Run by
// cmd/aacmcp/internal/cli/audit_report_test.go.
import { pathToFileURL } from 'node:url';
import { readFile } from 'node:fs/promises';
import { launchBrowser } from '../oauth/browser.mjs';

const file = process.env.AACMCP_REPORT;
const probe = process.env.AACMCP_PROBE_URL;
const browser = await launchBrowser();
try {
  const page = await browser.context.newPage();
  const requests = [];
  const violations = [];
  const failed = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('requestfailed', (r) => failed.push(`${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('console', (m) => { if (/Content Security Policy/i.test(m.text())) violations.push(m.text()); });
  const url = pathToFileURL(file).href;
  await page.setViewportSize({ width: 1200, height: 900 });
  await page.goto(url, { waitUntil: 'load' });
  await page.evaluate(() => document.fonts.ready);
  const seen = await page.evaluate(() => ({
    csp: document.querySelector('meta[http-equiv="Content-Security-Policy"]')?.content ?? null,
    scripts: document.scripts.length,
    totals: Object.fromEntries([...document.querySelectorAll('[data-total]')]
      .map((d) => [d.dataset.total, Number(d.querySelector('b').textContent)])),
    fonts: [...document.fonts].map((f) => ({ family: f.family, status: f.status })),
    sections: [...document.querySelectorAll('section')].map((s) => ({
      id: s.id,
      query: s.dataset.query,
      named: s.querySelector('.query code')?.textContent ?? '',
      charts: s.querySelectorAll('.chart svg').length,
      emptyCharts: s.querySelectorAll('.chart-empty svg').length,
      chartText: [...s.querySelectorAll('.chart svg text')].map((t) => t.textContent),
      columns: [...s.querySelectorAll('thead th')].map((th) => th.textContent),
      rows: [...s.querySelectorAll('tbody tr')].map((tr) => [...tr.cells].map((td) => td.textContent)),
    })),
  }));
  if (process.env.AACMCP_SCREENSHOT) {
    await page.screenshot({ path: process.env.AACMCP_SCREENSHOT, fullPage: false });
  }
  // The CSP at work: content added to the page may not load anything. The browser
  // logs the attempt as a request, which fails without leaving the machine.
  const pageRequests = [...requests];
  const blocked = await page.evaluate(async (u) => {
    const img = new Image();
    const loaded = new Promise((res) => { img.onload = () => res('loaded'); img.onerror = () => res('error'); });
    img.src = u + '/img';
    document.body.append(img);
    let fetched = 'blocked';
    try { await fetch(u + '/fetch'); fetched = 'fetched'; } catch { /* refused by connect-src */ }
    return { img: await loaded, fetched };
  }, probe);
  await page.waitForTimeout(200);
  // The control: the same page without its CSP loads the probe image.
  const html = (await readFile(file, 'utf8')).replace(/<meta http-equiv="Content-Security-Policy"[^>]*>/, '');
  const control = await browser.context.newPage();
  await control.setContent(html);
  const controlImg = await control.evaluate(async (u) => {
    const img = new Image();
    const done = new Promise((res) => { img.onload = () => res('loaded'); img.onerror = () => res('error'); });
    img.src = u + '/control';
    document.body.append(img);
    return done;
  }, probe);
  process.stdout.write(JSON.stringify({ url, requests: pageRequests, failed, violations, blocked, controlImg, ...seen }));
} finally {
  await browser.close();
}
