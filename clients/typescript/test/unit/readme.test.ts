// The README's "Ten lines" are what a developer copies first: they must
// compile under `tsc --strict` as written, given only the names the README
// says are the app's own (token, order, showDeclined).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');

// tenLines is the first ts block after the README's "## Ten lines".
function tenLines(): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Ten lines'));
  const m = /```ts\n([\s\S]*?)```/.exec(section);
  if (!m) throw new Error('README.md has no ts block under "## Ten lines"');
  return m[1];
}

describe("the README's ten lines", () => {
  it('compile under tsc --strict with only the app names declared', () => {
    // Inside the package, so that the client's own dependencies resolve.
    const dir = mkdtempSync(join(root, '.readme-check-'));
    try {
      const example = tenLines();
      const app = 'declare const token: string;\ndeclare const order: { paymentKey: string };\ndeclare function showDeclined(code: string | null): void;\n';
      writeFileSync(join(dir, 'example.ts'), example.replace(/^(import .*\n)/, `$1${app}`));
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            noEmit: true,
            target: 'ES2022',
            lib: ['ES2022', 'DOM'],
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            skipLibCheck: true,
            types: [],
            paths: { '@cmpay/client': ['../src/index.ts'] },
          },
          files: ['example.ts'],
        }),
      );
      writeFileSync(join(dir, 'package.json'), '{"type":"module"}');
      const tsc = spawnSync(join(root, 'node_modules/.bin/tsc'), ['-p', dir], { encoding: 'utf8' });
      expect(tsc.stdout + tsc.stderr).toBe('');
      expect(tsc.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
