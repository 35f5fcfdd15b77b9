#!/usr/bin/env bash
# Every test of packfs-web, runnable on a fresh machine. Installs what is
# missing first (never a downloaded browser):
#   - the wasm32-unknown-unknown target and wasm-bindgen-cli at the version
#     pinned in web/Cargo.toml (web/build.sh),
#   - Debian's chromium and chromium-driver (apt-get),
#   - web/node_modules from the committed package-lock.json (npm ci).
# Then runs:
#   1. the crate's unit tests on the host,
#   2. the API tests in headless Chromium (wasm-bindgen-test, chromedriver),
#   3. the p1 guests on PackFS natively (host/tests/guests.rs), which leave
#      their transcripts and starting packs for step 4,
#   4. the end-to-end tests of the demo page, the Range-laziness tests and
#      the p1 guests in a Web Worker (node --test, playwright-core driving
#      /usr/bin/chromium, pages served by web/e2e/server.mjs on 127.0.0.1),
#      and the npm package as a client gets it: `npm pack`, installed into
#      web/examples/vite-app (its own npm ci), type-checked with tsc,
#      bundled by Vite and run in Chromium (e2e/package.test.mjs).
#      Screenshots: web/e2e/artifacts/.
set -euo pipefail
web="$(cd "$(dirname "$0")" && pwd)"
cd "$web/.."

sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
if ! [ -x /usr/bin/chromium ] || ! [ -x /usr/bin/chromedriver ]; then
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium chromium-driver
fi

# Installs the target and the pinned wasm-bindgen-cli if missing; builds web/pkg.
web/build.sh

# node_modules as package-lock.json says (npm ls fails on anything missing
# or different).
if ! (cd web && npm ls --all >/dev/null 2>&1); then
    (cd web && npm ci --no-audit --no-fund)
fi

echo "== packfs-web: unit tests (host)"
cargo test -p packfs-web

echo "== packfs-web: API tests in headless Chromium (wasm-bindgen-test)"
CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner \
CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}" \
    cargo test -p packfs-web --target wasm32-unknown-unknown

echo "== packfs-web: the p1 guests' native transcripts and starting packs (target/guest-tests/browser)"
cargo test -p packfs-host --test guests -- p1

echo "== packfs-web: demo page, Range laziness and p1 guests in headless Chromium (playwright-core)"
(cd web && node --test --test-concurrency=1 e2e/)
