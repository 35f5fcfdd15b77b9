// PACKFS_WEB_PKG=DIR: the tests that use this serve /pkg/ from DIR instead
// of web/pkg, to run them against another build (an older commit's, to see
// them fail there).

import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/** Every file under `dir`, by URL path under `prefix`. */
function tree(dir, prefix) {
  const files = {};
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) Object.assign(files, tree(path, `${prefix}${name}/`));
    else files[`${prefix}${name}`] = readFileSync(path);
  }
  return files;
}

/** For startServer's `files`: PACKFS_WEB_PKG's files under /pkg/, or none. */
export function pkgOverride() {
  const dir = process.env.PACKFS_WEB_PKG;
  return dir ? tree(dir, "/pkg/") : {};
}
