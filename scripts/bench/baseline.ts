/**
 * The bare baselines of the benchmark, each a process of its own answering
 * `GET /check?ip=…` with a single-row primary-key lookup on the same database:
 *   tsx scripts/bench/baseline.ts http|express   (PORT, DATABASE_URL)
 */
import { createServer } from 'node:http';
import express from 'express';
import pg from 'pg';

const kind = process.argv[2];
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
const QUERY = 'select ip, total_reports, last_reported_at from ip_stats where ip = $1';

async function lookup(ip: string) {
  const { rows } = await pool.query({ name: 'baseline-lookup', text: QUERY, values: [ip] });
  return rows[0] ?? null;
}

const port = Number(process.env.PORT);
if (kind === 'http') {
  createServer(async (req, res) => {
    const ip = new URL(req.url ?? '/', 'http://x').searchParams.get('ip') ?? '';
    const row = await lookup(ip);
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify({ data: row }));
  }).listen(port, '127.0.0.1');
} else {
  const app = express();
  app.get('/check', async (req, res) => {
    res.json({ data: await lookup(String(req.query.ip ?? '')) });
  });
  app.listen(port, '127.0.0.1');
}
