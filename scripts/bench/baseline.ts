/**
 * The bare baselines of the benchmark, each a process of its own answering
 * `GET /check?ip=…` with a single-row primary-key lookup on the same database:
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

const port = Number(process.env.PORT);
let server: Server;
if (kind === 'http') {
  server = createServer(async (req, res) => {
    const ip = new URL(req.url ?? '/', 'http://x').searchParams.get('ip') ?? '';
    const row = await lookup(ip);
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify({ data: row }));
  });
} else {
  const app = express();
  app.get('/check', async (req, res) => {
    res.json({ data: await lookup(String(req.query.ip ?? '')) });
  });
  server = createServer(app);
}
server.listen(port, '127.0.0.1', () => announceListening((server.address() as AddressInfo).port));
