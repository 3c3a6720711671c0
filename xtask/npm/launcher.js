#!/usr/bin/env node
// hooks-app's npm launcher: runs the binary of this platform, which npm installed as one of
// the optional dependencies beside this package (or as a package of its own, next to it).
// It passes the arguments, the exit code and a signal on, and does nothing else: the
// Claude Code hook `hooks-app install` writes names that binary itself, never this file.
"use strict";
const { spawn } = require("node:child_process");
const path = require("node:path");

const PLATFORMS = __PLATFORMS__;
const key = `${process.platform}-${process.arch}`;
const pkg = PLATFORMS[key];
if (!pkg) {
  console.error(
    `hooks-app: no build for ${key}; the npm packages are built for ${Object.keys(PLATFORMS).join(", ")} (or: cargo install hooks-app)`
  );
  process.exit(1);
}
let bin;
try {
  bin = path.join(path.dirname(require.resolve(`${pkg}/package.json`)), "bin", "hooks-app");
} catch {
  console.error(
    `hooks-app: ${pkg}, the build for ${key}, is not installed (npm leaves an optional dependency out when it cannot fetch it): npm install -g ${pkg}`
  );
  process.exit(1);
}
const child = spawn(bin, process.argv.slice(2), { stdio: "inherit" });
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(sig, () => child.kill(sig));
}
child.on("error", (e) => {
  console.error(`hooks-app: could not run ${bin}: ${e.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
