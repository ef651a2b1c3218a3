// A payer process for kill.test.ts: it resumes what an earlier, killed,
// payer left in its storage file, then makes its one intended payment and
// refunds part of it. The test kills it with SIGKILL at a random moment.
// Every key it stores is appended to a journal before its request leaves;
// appendFileSync has reached the kernel when it returns, so a SIGKILL
// cannot lose it.
import { appendFileSync } from 'node:fs';
import { CMPayClient, fileStorage } from '../../dist/index.js';

const { CMPAY_URL, CMPAY_TOKEN, PAYER_STORAGE, PAYER_JOURNAL, PAYER_INTENT } = process.env;
const note = (o) => appendFileSync(PAYER_JOURNAL, JSON.stringify(o) + '\n');
const client = new CMPayClient({
  url: CMPAY_URL,
  token: CMPAY_TOKEN,
  storage: fileStorage(PAYER_STORAGE),
  retry: { baseDelayMs: 20, maxDelayMs: 200, maxAttempts: 20 },
  onStored: (op) => note({ stored: op }),
});
process.stdout.write('started\n');

for (const o of await client.resumePending()) {
  if (o.error && !o.error.pending) note({ error: `resume ${o.error.code}: ${o.error.message}` });
}
if (PAYER_INTENT) {
  const { clientId } = JSON.parse(PAYER_INTENT);
  const { payment } = await client.createPayment({ clientId, amount: '10.00', currency: 'BRL', method: 'CREDIT_CARD' });
  await client.refundPayment({ paymentId: payment.id, amount: '1.00' });
}
process.stdout.write(`done ${JSON.stringify(client.pending())}\n`);
// fetch keeps idle connections open for seconds; the payer is done now.
process.exit(0);
