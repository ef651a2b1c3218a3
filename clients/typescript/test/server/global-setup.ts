// Starts what the tests against the real server need, once per run: the
// CMPay server built from this repository (go build into a temporary
// folder) on SQLite and a random port, and a static server for the browser
// test's page, whose origin the CMPay server allows (CORS_ORIGINS).
import { execFileSync } from 'node:child_process';
import { createReadStream, existsSync, mkdtempSync, rmSync, statSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { TestProject } from 'vitest/node';
import { startServer } from './server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The GraphQL endpoint of the server under test. */
    graphqlUrl: string;
    /** Its address, host:port. */
    serverAddr: string;
    /** A token it accepts. */
    token: string;
    /** The page server's origin, which the CMPay server allows. */
    pageOrigin: string;
    /** A folder for the tests' own files. */
    workDir: string;
    /** The server binary, for tests that start a server of their own. */
    serverBin: string;
  }
}

const pkg = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const repo = resolve(pkg, '../..');

// The tests run the built package, as callers do: fail early, and say
// why, when dist is missing or older than the sources.
function checkBuilt() {
  const dist = join(pkg, 'dist/index.js');
  if (!existsSync(dist)) throw new Error('dist/index.js is missing: run `npm run build` before `npm test`');
  const newest = (dir: string): number =>
    Math.max(...readdirSync(dir, { withFileTypes: true }).map((e) =>
      e.isDirectory() ? newest(join(dir, e.name)) : statSync(join(dir, e.name)).mtimeMs));
  if (newest(join(pkg, 'src')) > statSync(dist).mtimeMs) {
    throw new Error('dist is older than src: run `npm run build` before `npm test`');
  }
}

function servePage(dir: string): Promise<Server> {
  const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript' };
  const server = createServer((req, res) => {
    const name = new URL(req.url ?? '/', 'http://x').pathname.replace(/^\/$/, '/index.html').slice(1);
    const file = join(dir, name);
    if (!/^[\w.-]+$/.test(name) || !existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': types[name.slice(name.lastIndexOf('.'))] ?? 'application/octet-stream', 'Cache-Control': 'no-store' });
    createReadStream(file).pipe(res);
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok(server)));
}

export default async function setup(project: TestProject) {
  checkBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'cmpay-ts-'));
  const bin = process.env.CMPAY_SERVER_BIN ?? join(dir, 'cmpay');
  if (!process.env.CMPAY_SERVER_BIN) execFileSync('go', ['build', '-o', bin, '.'], { cwd: repo, stdio: 'inherit' });

  const pageDir = join(dir, 'page');
  await build({
    entryPoints: { page: join(pkg, 'test/server/page.ts') },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'chrome120',
    outdir: pageDir,
    logLevel: 'warning',
  });
  execFileSync('cp', [join(pkg, 'test/server/page.html'), join(pageDir, 'index.html')]);
  const page = await servePage(pageDir);
  const pagePort = (page.address() as { port: number }).port;
  const pageOrigin = `http://127.0.0.1:${pagePort}`;

  const token = `ts-client-test-${process.pid}`;
  const server = await startServer(bin, dir, token, {
    CORS_ORIGINS: pageOrigin,
    // pm_sandbox_slow's first call gives up after this, and recovery
    // settles it this long after: short, for waitForSettled's test.
    PROCESSOR_TIMEOUT: '1s',
    PROCESSOR_RECOVERY_AFTER: '1s',
  });
  const addr = server.addr;
  project.provide('graphqlUrl', `http://${addr}/graphql`);
  project.provide('serverAddr', addr);
  project.provide('token', token);
  project.provide('pageOrigin', pageOrigin);
  project.provide('workDir', dir);
  project.provide('serverBin', bin);

  return async () => {
    page.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
