// Launches Debian's Chromium (never a downloaded one) headless, with the
// flags this machine needs as root and without network chatter, in a fresh
// profile (Playwright makes a new temporary user-data-dir per launch).

import { chromium } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

export function launch() {
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
  const { page, errors } = await newPage(browser);
  await page.goto(url);
  await page.waitForFunction((n) => window[n], name, { timeout: timeoutMs, polling: 1000 });
  const res = await page.evaluate((n) => window[n], name);
  if (res.error) throw new Error(res.error);
  if (errors.length) throw errors[0];
  return { ...res, chromium: browser.version() };
}
