/**
 * The bare baselines of the benchmark, each a process of its own answering
 * `GET /check?ip=…` with a single-row primary-key lookup on the same database, in a JSON body
 * padded to BODY_BYTES (the server's /check answer's size, which the bench measures first):
 *   tsx scripts/bench/baseline.ts http|express   (PORT, DATABASE_URL)
 * Started with PORT=0 and an IPC channel, it tells its parent the port it got, as the server does.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import pg from 'pg';
import { announceListening } from '../../src/ipc.js';

const kind = process.argv[2];
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const QUERY = 'select ip, total_reports, last_reported_at from ip_stats where ip = $1';

async function lookup(ip: string) {
  const { rows } = await pool.query({ name: 'baseline-lookup', text: QUERY, values: [ip] });
  return rows[0] ?? null;
}

/** Pads the answer to BODY_BYTES (the size of the server's /check answer), when given. */
const BODY_BYTES = Number(process.env.BODY_BYTES ?? 0);
function answer(row: unknown): string {
  const body = JSON.stringify({ data: row, pad: '' });
  return BODY_BYTES > body.length ? JSON.stringify({ data: row, pad: 'x'.repeat(BODY_BYTES - body.length) }) : body;
}

const port = Number(process.env.PORT);
let server: Server;
if (kind === 'http') {
  server = createServer(async (req, res) => {
    const ip = new URL(req.url ?? '/', 'http://x').searchParams.get('ip') ?? '';
    const row = await lookup(ip);
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    res.end(answer(row));
  });
} else {
  const app = express();
  app.get('/check', async (req, res) => {
    res.type('application/json').send(answer(await lookup(String(req.query.ip ?? ''))));
  });
  server = createServer(app);
}
server.listen(port, '127.0.0.1', () => announceListening((server.address() as AddressInfo).port));
