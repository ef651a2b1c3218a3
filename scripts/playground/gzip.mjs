// Compresses the Playground's text files in the folder given as the only
// argument: each *.js, *.css and *.txt becomes NAME.gz (gzip, level 9, no
// name or time in its header) and the original goes. The server embeds the
// .gz files and sends them as they are to browsers that accept gzip (all of
// them), and decompressed to any client that does not (web/static.go): the
// bundle is 5 MB of JavaScript, 1.4 MB compressed. SHA256SUMS, written
// before this runs, lists the files as served, uncompressed.
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const dir = process.argv[2];
for (const name of readdirSync(dir).sort()) {
  if (!/\.(js|css|txt)$/.test(name)) continue;
  const path = join(dir, name);
  writeFileSync(path + ".gz", gzipSync(readFileSync(path), { level: 9 }));
  rmSync(path);
}
