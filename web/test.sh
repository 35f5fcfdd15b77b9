#!/usr/bin/env bash
# Every test of packfs-web, runnable on a fresh machine. Installs what is
# missing first (never a downloaded browser):
#   - the wasm32-unknown-unknown target and wasm-bindgen-cli at the version
#     pinned in web/Cargo.toml (web/build.sh),
#   - Debian's chromium, chromium-driver, firefox-esr, and WebKitGTK's
#     webkit2gtk-driver (WebKitWebDriver, MiniBrowser) with xvfb (apt-get),
#   - web/node_modules from the committed package-lock.json (npm ci):
#     playwright-core, and the Deno and Bun runtimes.
# Then runs:
#   1. the crate's unit tests on the host,
#   2. the API tests in headless Chromium (wasm-bindgen-test, chromedriver),
#   3. the p1 and p2 guests on PackFS natively (host/tests/guests.rs), and
#      the scripts of 0.2 calls (host/tests/p2_scripts.rs), which leave
#      their transcripts, trees and starting packs for step 4,
#   4. the end-to-end tests of the demo page, the Range-laziness tests and
#      the p1 guests in a Web Worker (node --test, playwright-core driving
#      /usr/bin/chromium, pages served by web/e2e/server.mjs on 127.0.0.1),
#      the npm package as a client gets it: `npm pack`, installed into
#      web/examples/vite-app (its own npm ci), type-checked with tsc,
#      bundled by Vite and run in the browser (e2e/package.test.mjs), and
#      the package without a page, in Node, Deno and Bun
#      (e2e/runtimes.test.mjs; e2e/embedder.test.mjs: a careless embedder
#      and a hostile server), and the p2 guests transpiled by jco on
#      packfs-web/preview2 in Node, Deno and Bun (e2e/preview2.test.mjs,
#      runtimes.test.mjs) and on a page and in a Worker
#      (e2e/preview2-page.test.mjs). Screenshots: web/e2e/artifacts/.
#   5. the same end-to-end tests in Firefox ESR (PACKFS_BROWSER=firefox,
#      by WebDriver BiDi) and in WebKitGTK (PACKFS_BROWSER=webkit: MiniBrowser
#      by WebKitWebDriver under Xvfb), but for the runtimes, which have no
#      browser. A test an engine lacks a feature for says so and is skipped
#      there; the fallback it gets is checked instead.
set -euo pipefail
web="$(cd "$(dirname "$0")" && pwd)"
cd "$web/.."

sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
browsers=(chromium chromium-driver firefox-esr webkit2gtk-driver xvfb)
if ! dpkg -s "${browsers[@]}" >/dev/null 2>&1; then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${browsers[@]}"
fi

# Installs the target and the pinned wasm-bindgen-cli if missing; builds web/pkg.
web/build.sh

# node_modules as package-lock.json says (npm ls fails on anything missing
# or different).
if ! (cd web && npm ls --all >/dev/null 2>&1); then
    (cd web && npm ci --no-audit --no-fund)
fi

echo "== packfs-web: the JavaScript checked against its declarations, and its public face"
# The code type-checked (tsc --checkJs), its JSDoc types being the
# declarations' (import("./runner.js").RunOptions, ...); then every export
# of every entry point against the .d.ts files, listed as api/*.txt lists
# the crates' (PACKFS_API_UPDATE=1 writes it anew).
(cd web/pkg && ../node_modules/typescript/bin/tsc --allowJs --checkJs --noEmit --target es2022 --module nodenext \
    --moduleResolution nodenext --lib esnext,dom --skipLibCheck $(cd ../js && ls ./*.js))
api_out="$(realpath "${CARGO_TARGET_DIR:-target}")/api"
mkdir -p "$api_out"
node .ci/js-api.mjs web/pkg >"$api_out/packfs-web.txt"
if [ -n "${PACKFS_API_UPDATE:-}" ]; then
    cp "$api_out/packfs-web.txt" api/packfs-web.txt
elif ! diff -u api/packfs-web.txt "$api_out/packfs-web.txt"; then
    echo "packfs-web's public API changed (above); if that is meant: PACKFS_API_UPDATE=1 ./test.sh" >&2
    exit 1
fi

echo "== packfs-web: unit tests (host)"
cargo test -p packfs-web

echo "== packfs-web: API tests in headless Chromium (wasm-bindgen-test)"
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}" \
    cargo test -p packfs-web --target wasm32-unknown-unknown

echo "== packfs-web: the p1 and p2 guests' native transcripts and starting packs (target/guest-tests/browser)"
cargo test -p packfs-host --test guests -- p1 p2
cargo test -p packfs-host --test p2_scripts

echo "== packfs-web: demo page, Range laziness, p1 guests and the package in headless Chromium; Node, Deno and Bun"
(cd web && node --test --test-concurrency=1 e2e/)

for engine in firefox webkit; do
    echo "== packfs-web: the same in $engine"
    (cd web && PACKFS_BROWSER=$engine node --test --test-concurrency=1 $(ls e2e/*.test.mjs | grep -v 'runtimes\|embedder\|/preview2\.test\|/virt\.test'))
done
