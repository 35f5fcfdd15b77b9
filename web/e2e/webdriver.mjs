// WebKitGTK for the e2e tests: Debian's MiniBrowser driven by WebKitWebDriver
// (classic WebDriver, JSON over HTTP) under a private Xvfb display, behind
// the part of Playwright's Browser, BrowserContext and Page API the tests
// use. Playwright drives only its own WebKit build, never this one.
//
// A context is a WebDriver session (a MiniBrowser of its own, with its own
// storage); a page, one of its windows. Every command is short: an
// `evaluate` starts the function in the page and then polls for its
// result, so that two pages of one session (two tabs of an origin) can
// wait on each other. Errors a page raises after it loaded (uncaught
// errors, rejections, console.error) reach `on("pageerror" | "console")`
// after each command; errors during its load are not seen.

import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";

export const MINIBROWSER = process.env.MINIBROWSER ?? "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser";

/** A free port on 127.0.0.1. */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.on("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts Xvfb; resolves to a Playwright-like Browser whose every context
 *  is a WebKitWebDriver of its own (one takes one session at a time). */
export async function launchWebKit() {
  if (!existsSync(MINIBROWSER)) throw new Error(`no MiniBrowser at ${MINIBROWSER} (Debian: webkit2gtk-driver)`);
  // Xvfb picks a free display itself and says which.
  const xvfb = spawn("Xvfb", ["-displayfd", "1", "-screen", "0", "1280x800x24", "-nolisten", "tcp"], { stdio: ["ignore", "pipe", "ignore"] });
  const display = await new Promise((resolve, reject) => {
    xvfb.stdout.once("data", (d) => resolve(`:${String(d).trim()}`));
    xvfb.once("exit", (c) => reject(new Error(`Xvfb exited (${c})`)));
  });
  let version = "";
  const contexts = new Set();
  return {
    version: () => version,
    async newContext() {
      const port = await freePort();
      // SharedArrayBuffer, which MiniBrowser keeps off unless told.
      const driver = spawn("WebKitWebDriver", [`--port=${port}`], {
        stdio: "ignore",
        env: { ...process.env, DISPLAY: display, JSC_useSharedArrayBuffer: "true" },
      });
      const base = `http://127.0.0.1:${port}`;
      for (let i = 0; ; i++) {
        try {
          await fetch(`${base}/status`);
          break;
        } catch (e) {
          if (i > 100) throw e;
          await sleep(50);
        }
      }
      const s = await wd(base, "POST", "/session", {
        capabilities: {
          alwaysMatch: {
            "webkitgtk:browserOptions": { binary: MINIBROWSER, args: ["--automation", "--features=+FileSystem,+StorageAPI"] },
            timeouts: { script: 600_000, pageLoad: 120_000 },
          },
        },
      });
      version = s.capabilities.browserVersion;
      const context = new Context(base, s.sessionId);
      contexts.add(context);
      context.closed = () => {
        contexts.delete(context);
        setTimeout(() => driver.kill(), 1000);
      };
      return context;
    },
    async newPage() {
      return (await this.newContext()).newPage();
    },
    async close() {
      for (const c of [...contexts]) await c.close().catch(() => {});
      await sleep(1000);
      xvfb.kill();
    },
  };
}

/** A WebDriver command; its `value`, or a thrown error. */
async function wd(base, method, path, body) {
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const { value } = await r.json();
  if (value?.error) throw new Error(`WebDriver ${path.split("/").slice(3).join("/")}: ${value.error}: ${value.message}`);
  return value;
}

class Context {
  #base;
  #id;
  #first = true;
  #turn = Promise.resolve();
  pages = [];
  constructor(base, id) {
    this.#base = base;
    this.#id = id;
  }

  /** Runs `f(cmd)` with this session's window `handle` current, one at a time. */
  on(handle, f) {
    const run = this.#turn.then(async () => {
      const cmd = (method, path, body) => wd(this.#base, method, `/session/${this.#id}${path}`, body);
      if (handle !== null) await cmd("POST", "/window", { handle });
      return f(cmd);
    });
    this.#turn = run.catch(() => {});
    return run;
  }

  async newPage() {
    const handle = await this.on(null, async (cmd) => {
      if (this.#first) {
        this.#first = false;
        await cmd("POST", "/window/rect", { width: 1280, height: 800 }).catch(() => {});
        return cmd("GET", "/window");
      }
      return (await cmd("POST", "/window/new", { type: "tab" })).handle;
    });
    const page = new Page(this, handle);
    this.pages.push(page);
    return page;
  }

  newCDPSession() {
    throw new Error("WebKitGTK has no DevTools protocol");
  }

  async close() {
    try {
      await this.on(null, (cmd) => cmd("DELETE", ""));
    } finally {
      this.closed?.();
    }
  }
}

/** Installed in a page after it loads: keeps its errors for `on`. */
const WATCH = `if (!window.__e2eErrors) {
  window.__e2eErrors = [];
  addEventListener("error", (e) => __e2eErrors.push({ type: "pageerror", text: String(e.error?.stack ?? e.message) }));
  addEventListener("unhandledrejection", (e) => __e2eErrors.push({ type: "pageerror", text: String(e.reason?.stack ?? e.reason) }));
  const error = console.error;
  console.error = (...a) => { __e2eErrors.push({ type: "console", text: a.join(" ") }); error.apply(console, a); };
  window.__e2eRuns = new Map();
}`;

/** `v` with every `{ __undefined: 1 }` in it undefined again (JSON has
 *  no undefined; Playwright keeps properties that are). */
function undefinedBack(v) {
  if (v === null || typeof v !== "object") return v;
  if (v.__undefined === 1 && Object.keys(v).length === 1) return undefined;
  for (const k of Object.keys(v)) v[k] = undefinedBack(v[k]);
  return v;
}

class Page {
  #context;
  #handle;
  #listeners = { pageerror: [], console: [] };
  #runs = 0;
  constructor(context, handle) {
    this.#context = context;
    this.#handle = handle;
  }

  #on(f) {
    return this.#context.on(this.#handle, f);
  }

  /** Runs `script` (a function body, arguments in `arguments`) in the page. */
  async #script(script, args = []) {
    const value = await this.#on((cmd) => cmd("POST", "/execute/sync", { script: `${WATCH}\n${script}`, args }));
    await this.#errors();
    return value;
  }

  async #errors() {
    const errs = await this.#on((cmd) => cmd("POST", "/execute/sync", { script: "const e = window.__e2eErrors ?? []; window.__e2eErrors = window.__e2eErrors && []; return e;", args: [] }));
    for (const { type, text } of errs ?? []) {
      if (type === "pageerror") this.#listeners.pageerror.forEach((f) => f(new Error(text)));
      else this.#listeners.console.forEach((f) => f({ type: () => "error", text: () => text }));
    }
  }

  on(event, f) {
    this.#listeners[event]?.push(f);
  }

  async goto(url) {
    await this.#on((cmd) => cmd("POST", "/url", { url }));
    await this.#script("");
  }

  /** `fn(arg)` in the page, awaited there; its result as JSON.stringify
   *  gives it. */
  async evaluate(fn, arg) {
    const id = ++this.#runs;
    await this.#script(
      `const [id, src, arg] = arguments;
       __e2eRuns.set(id, null);
       Promise.resolve().then(() => (0, eval)("(" + src + ")")(arg)).then(
         (v) => __e2eRuns.set(id, { v: JSON.stringify(v === undefined ? null : v, (k, x) => (x === undefined ? { __undefined: 1 } : x)) }),
         (e) => __e2eRuns.set(id, { e: String(e?.stack ? e.message + "\\n" + e.stack : e) }));`,
      [id, fn.toString(), arg === undefined ? null : arg],
    );
    for (let wait = 1; ; wait = Math.min(wait * 2, 100)) {
      const r = await this.#script("const r = __e2eRuns.get(arguments[0]); if (r) __e2eRuns.delete(arguments[0]); return r;", [id]);
      if (r === undefined) throw new Error("the page was navigated away during evaluate");
      if (r !== null) {
        if ("e" in r) throw new Error(r.e);
        // As JSON text: WebDriver's own serialization reorders keys.
        return undefinedBack(JSON.parse(r.v));
      }
      await sleep(wait);
    }
  }

  async waitForFunction(fn, arg, { timeout = 30_000, polling = 100 } = {}) {
    const due = Date.now() + timeout;
    for (;;) {
      const v = await this.evaluate(fn, arg);
      if (v) return v;
      if (Date.now() > due) throw new Error(`waitForFunction: ${timeout} ms passed`);
      await sleep(typeof polling === "number" ? polling : 50);
    }
  }

  async waitForSelector(selector, { state = "visible", timeout = 30_000 } = {}) {
    const check = ([sel, state]) => {
      const el = document.querySelector(sel);
      const visible = !!el && el.getClientRects().length > 0 && getComputedStyle(el).visibility !== "hidden";
      return state === "attached" ? !!el : state === "hidden" ? !visible : visible;
    };
    await this.waitForFunction(check, [selector, state], { timeout });
  }

  async #element(selector, f) {
    await this.waitForSelector(selector, { state: "attached" });
    return this.evaluate(f, selector);
  }

  click(selector) {
    return this.#element(selector, (sel) => {
      const el = document.querySelector(sel);
      el.scrollIntoView({ block: "center" });
      el.click();
    });
  }

  async fill(selector, value) {
    await this.waitForSelector(selector, { state: "attached" });
    await this.evaluate(([sel, value]) => {
      const el = document.querySelector(sel);
      el.focus();
      el.value = value;
      el.dispatchEvent(new Event("input", { bubbles: true }));
      el.dispatchEvent(new Event("change", { bubbles: true }));
    }, [selector, value]);
  }

  /** `fn(elements)` in the page, over every element `selector` finds. */
  $$eval(selector, fn) {
    return this.evaluate(([sel, src]) => (0, eval)(`(${src})`)(Array.from(document.querySelectorAll(sel))), [selector, fn.toString()]);
  }

  /** `fn(element)` in the page, over the first element `selector` finds. */
  async $eval(selector, fn) {
    await this.waitForSelector(selector, { state: "attached" });
    return this.evaluate(([sel, src]) => (0, eval)(`(${src})`)(document.querySelector(sel)), [selector, fn.toString()]);
  }

  textContent(selector) {
    return this.#element(selector, (sel) => document.querySelector(sel).textContent);
  }

  inputValue(selector) {
    return this.#element(selector, (sel) => document.querySelector(sel).value);
  }

  isHidden(selector) {
    return this.evaluate((sel) => {
      const el = document.querySelector(sel);
      return !el || el.getClientRects().length === 0 || getComputedStyle(el).visibility === "hidden";
    }, selector);
  }

  /** Gives the file input `selector` the file `{ name, mimeType, buffer }`. */
  setInputFiles(selector, { name, mimeType, buffer }) {
    return this.evaluate(
      ([sel, name, type, b64]) => {
        const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
        const dt = new DataTransfer();
        dt.items.add(new File([bytes], name, { type }));
        const input = document.querySelector(sel);
        input.files = dt.files;
        input.dispatchEvent(new Event("change", { bubbles: true }));
      },
      [selector, name, mimeType, Buffer.from(buffer).toString("base64")],
    );
  }

  async screenshot({ path }) {
    const png = await this.#on((cmd) => cmd("GET", "/screenshot"));
    writeFileSync(path, Buffer.from(png, "base64"));
  }

  async close() {
    await this.#on((cmd) => cmd("DELETE", "/window"));
  }
}
