// Bundles the Playground with esbuild into the folder given as the only
// argument: playground.js and playground.css (main.jsx and everything it
// imports), Monaco's three web workers, Monaco's icon font, and
// LICENSES.txt with the licence of every npm package whose code or styles
// ended up in any of those files. scripts/build-playground.sh runs it after
// `npm ci`; the same inputs give byte-identical files (no timestamps, no
// absolute paths, packages and files in sorted order), which is what lets
// `build-playground.sh --check` compare a fresh build with the committed one.
import * as esbuild from "esbuild";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2];
if (!out) {
  console.error("usage: node build.mjs OUTDIR");
  process.exit(2);
}

const common = {
  absWorkingDir: here,
  bundle: true,
  minify: true,
  // Chromium, Firefox and Safari of the last few years: class fields,
  // optional chaining and top-level code as written, no down-levelling.
  target: ["es2022"],
  define: { "process.env.NODE_ENV": '"production"' },
  // Legal comments (/*! … */, @license) of the bundled code stay, gathered
  // at the end of each file; the full licences are in LICENSES.txt.
  legalComments: "eof",
  metafile: true,
  logLevel: "warning",
};

const builds = await Promise.all([
  esbuild.build({
    ...common,
    entryPoints: { playground: "main.jsx" },
    outdir: out,
    // A classic script (not a module): main.jsx finds the workers beside
    // it through document.currentScript.
    format: "iife",
    jsx: "automatic",
    // Monaco's codicon.ttf is referenced from its CSS: served beside
    // playground.css under a fixed name rather than a content hash, like
    // every other Playground asset (SHA256SUMS pins the contents).
    loader: { ".ttf": "file" },
    assetNames: "[name]",
  }),
  // Monaco's web workers, each a file of its own that MonacoEnvironment in
  // main.jsx starts with new Worker(url): served by this server, so the
  // CSP's worker-src 'self' covers them.
  esbuild.build({
    ...common,
    entryPoints: {
      "editor.worker": "monaco-editor/esm/vs/editor/editor.worker.js",
      "json.worker": "monaco-editor/esm/vs/language/json/json.worker.js",
      "graphql.worker": "monaco-graphql/esm/graphql.worker.js",
    },
    outdir: out,
    format: "iife",
  }),
]);

// Every package that put at least one byte into an output.
const packages = new Map(); // root dir -> package.json
for (const { metafile } of builds) {
  for (const output of Object.values(metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      if (bytesInOutput === 0) continue;
      const m = input.match(/^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//);
      if (!m) {
        // Ours (main.jsx, page.css), not vendored; nothing from elsewhere.
        if (/^[\w.-]+$/.test(input)) continue;
        throw new Error(`${input} is bundled but belongs to no npm package`);
      }
      if (!packages.has(m[1])) {
        packages.set(m[1], JSON.parse(readFileSync(join(here, m[1], "package.json"), "utf8")));
      }
    }
  }
}

// Packages published without a licence file: where their licence text is
// taken from instead, either the package of the same repository and
// licence, or a file in ./licenses copied from the package's repository.
const licenceFrom = {
  // graphql/graphiql monorepo, MIT, "Copyright (c) 2021 GraphQL Contributors"
  "@graphiql/plugin-doc-explorer": "node_modules/graphiql",
  "@graphiql/plugin-history": "node_modules/graphiql",
  // facebook/react monorepo, MIT, "Copyright (c) Meta Platforms, Inc. and affiliates."
  "react-compiler-runtime": "node_modules/react",
  // MIT per its package.json; the LICENSE file of
  // https://github.com/theKashey/react-remove-scroll-bar (commit 8ca9ba5)
  "react-remove-scroll-bar": "licenses/react-remove-scroll-bar.LICENSE",
};
const licenceFile = /^(licen[cs]e|copying)(\b|[.-])/i;
// Notices a package ships about the code of others it includes (Monaco).
const noticeFile = /^(notice|thirdpartynotices)(\.|$)/i;

function filesMatching(dir, re) {
  return readdirSync(join(here, dir))
    .filter((f) => re.test(f))
    .sort()
    .map((f) => join(dir, f));
}

const sections = [];
const unlicensed = [];
const seen = new Set(); // name@version: npm may install one version in several places
const roots = [...packages.keys()].sort((a, b) => {
  const [x, y] = [packages.get(a), packages.get(b)];
  return x.name === y.name ? x.version.localeCompare(y.version) : x.name < y.name ? -1 : 1;
});
for (const root of roots) {
  const pkg = packages.get(root);
  if (seen.has(`${pkg.name}@${pkg.version}`)) continue;
  seen.add(`${pkg.name}@${pkg.version}`);
  let files = filesMatching(root, licenceFile);
  const from = licenceFrom[pkg.name];
  if (files.length === 0 && from && existsSync(join(here, from))) {
    files = from.startsWith("licenses/") ? [from] : filesMatching(from, licenceFile);
  }
  if (files.length === 0) {
    unlicensed.push(`${pkg.name}@${pkg.version} (${pkg.license}, ${JSON.stringify(pkg.repository)})`);
    continue;
  }
  files.push(...filesMatching(root, noticeFile));
  const texts = files.map((f) => readFileSync(join(here, f), "utf8").replace(/\r\n/g, "\n").trimEnd());
  sections.push(`${"=".repeat(78)}\n${pkg.name}@${pkg.version} (${pkg.license})\n${"=".repeat(78)}\n\n${texts.join("\n\n")}\n`);
}
if (unlicensed.length > 0) {
  throw new Error(`bundled, but published without a licence file (add them to licenceFrom):\n  ${unlicensed.join("\n  ")}`);
}
writeFileSync(
  join(out, "LICENSES.txt"),
  "The licences of the npm packages bundled into the Playground's files (playground.js,\n" +
    "playground.css, codicon.ttf and the *.worker.js files), one section per package,\n" +
    "gathered by scripts/build-playground.sh.\n\n" +
    sections.join("\n"),
);
console.error(`bundled ${roots.length} packages`);
