// Launches a browser from Debian (never a downloaded one) headless, without
// network chatter, in a fresh profile (Playwright makes a new temporary
// user-data-dir per launch): Chromium; with PACKFS_BROWSER=firefox,
// Firefox ESR (by WebDriver BiDi: Playwright's "moz-firefox" channel runs
// a stock Firefox); with PACKFS_BROWSER=webkit, WebKitGTK's MiniBrowser
// (by classic WebDriver, behind the same API: webdriver.mjs). Every e2e
// file runs in each engine web/test.sh names.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { chromium, firefox } from "playwright-core";

import { launchWebKit } from "./webdriver.mjs";

export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
export const FIREFOX = process.env.FIREFOX ?? "/usr/bin/firefox-esr";
/** The engine under test: "chromium", "firefox" or "webkit". */
export const ENGINE = process.env.PACKFS_BROWSER ?? "chromium";
if (!["chromium", "firefox", "webkit"].includes(ENGINE)) throw new Error(`PACKFS_BROWSER=${ENGINE}: chromium, firefox or webkit`);

/** WebDriver BiDi commands Playwright (1.64) sends Firefox for what no
 *  test uses (response bodies kept, downloads' behaviour, the screen's
 *  emulation), which Debian 12's Firefox ESR 140 does not know. */
const UNNEEDED = [
  "network.addDataCollector",
  "browser.setDownloadBehavior",
  "emulation.setScreenOrientationOverride",
  "emulation.setScreenSettingsOverride",
];

/**
 * Playwright fails a launch, or a new context, when Firefox answers one of
 * {@link UNNEEDED} with "unknown command": that answer, to those alone, is
 * taken as done; every other message passes as it is.
 */
function toleratingFirefox() {
  const { ws } = createRequire(import.meta.url)("playwright-core/lib/utilsBundle");
  if (ws.prototype.packfsTolerant) return;
  ws.prototype.packfsTolerant = true;
  const asked = new Set();
  const send = ws.prototype.send;
  ws.prototype.send = function (data, ...rest) {
    if (typeof data === "string" && UNNEEDED.some((c) => data.includes(`"${c}"`))) {
      const m = JSON.parse(data);
      if (UNNEEDED.includes(m.method)) asked.add(m.id);
    }
    return send.call(this, data, ...rest);
  };
  const listen = ws.prototype.addEventListener;
  ws.prototype.addEventListener = function (type, listener, options) {
    if (type !== "message") return listen.call(this, type, listener, options);
    return listen.call(this, type, (event) => {
      const m = asked.size > 0 && typeof event.data === "string" ? JSON.parse(event.data) : null;
      if (m?.type === "error" && m.error === "unknown command" && asked.delete(m.id)) {
        return listener({ data: JSON.stringify({ type: "success", id: m.id, result: {} }) });
      }
      return listener(event);
    }, options);
  };
}

/** `exposeGc`: Chromium gives pages and workers V8's `gc()` (the
 *  benchmarks collect garbage between runs with it); the other engines
 *  offer a page no such call. */
export function launch({ exposeGc = false } = {}) {
  if (ENGINE === "webkit") return launchWebKit();
  if (ENGINE === "firefox") {
    toleratingFirefox();
    return firefox.launch({
      channel: "moz-firefox",
      executablePath: FIREFOX,
      headless: true,
      firefoxUserPrefs: { "network.proxy.type": 0, "app.update.enabled": false, "browser.shell.checkDefaultBrowser": false },
    });
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...(exposeGc ? ["--js-flags=--expose-gc"] : []),
    ],
  });
}

/** A page that fails the test on uncaught page errors and logs the console. */
export async function newPage(browser, { acceptDownloads = false } = {}) {
  const context = await browser.newContext({ acceptDownloads, viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(new Error(m.text()));
  });
  return { page, context, errors };
}

/**
 * Opens `url` in a fresh page of `browser`, waits (up to `timeoutMs`) for
 * the page to set `window[name]`, and returns it with the browser's
 * version; throws the page's own `error`, or its first uncaught error.
 */
export async function pageResult(browser, url, name, timeoutMs) {
  const { page, context, errors } = await newPage(browser);
  try {
    await page.goto(url);
    await page.waitForFunction((n) => window[n], name, { timeout: timeoutMs, polling: 1000 });
    const res = await page.evaluate((n) => window[n], name);
    if (res.error) throw new Error(res.error);
    if (errors.length) throw errors[0];
    return { ...res, browser: `${ENGINE} ${browser.version()}` };
  } finally {
    await context.close();
  }
}

/**
 * What a click on `selector` downloads: `{ name, bytes }`. Firefox by
 * WebDriver BiDi reports no downloads to Playwright: there, a link the
 * page clicks with a `download` attribute is caught instead of followed,
 * and its bytes fetched in the page.
 */
export async function download(page, selector) {
  if (ENGINE === "chromium") {
    const [d] = await Promise.all([page.waitForEvent("download"), page.click(selector)]);
    return { name: d.suggestedFilename(), bytes: readFileSync(await d.path()) };
  }
  await page.evaluate(() => {
    if (window.caught) return;
    window.caught = [];
    const click = HTMLAnchorElement.prototype.click;
    HTMLAnchorElement.prototype.click = function () {
      if (this.download) window.caught.push({ name: this.download, href: this.href });
      else click.call(this);
    };
  });
  await page.click(selector);
  await page.waitForFunction(() => window.caught.length > 0);
  const { name, bytes } = await page.evaluate(async () => {
    const { name, href } = window.caught.shift();
    return { name, bytes: Array.from(new Uint8Array(await (await fetch(href)).arrayBuffer())) };
  });
  return { name, bytes: Buffer.from(bytes) };
}

/** Why a test that sets an origin's storage quota is skipped here: only
 *  Chromium's DevTools protocol sets one (`Storage.overrideQuotaForOrigin`);
 *  false in Chromium. */
export const QUOTA_SKIP = ENGINE !== "chromium" && `${ENGINE} offers no way to set an origin's quota (Chromium's DevTools protocol does)`;

/** Why a test that needs the origin's storage to last (OPFS, or the Cache
 *  API across page loads) is skipped here: WebKitGTK's MiniBrowser, driven
 *  by WebDriver, has an OPFS whose files fail (UnknownError) and a Cache
 *  API that forgets at a page load; false elsewhere. Each file that skips
 *  for it checks, there, what a page gets instead. */
export const STORAGE_SKIP =
  ENGINE === "webkit" && "WebKitGTK's MiniBrowser under WebDriver keeps no storage: its OPFS fails (UnknownError), its Cache API forgets at a load";
