/*
 * Dredd hooks. Dredd reads OpenAPI 3 only in part, so these hooks:
 * - prefix every request with the server base (/api/v2), which Dredd does not take from `servers`;
 * - send the key of a suitable role (Dredd ignores security schemes);
 * - stage the error cases they can stage (400, 401, 403) and skip the others, and skip the
 *   operations this server does not implement yet;
 * - give Dredd the real JSON Schema of each response body from the document (by itself it only
 *   compares keys), and strip the charset it would otherwise compare exactly.
 */
const fs = require('node:fs');
const path = require('node:path');
const hooks = require('hooks');

const document = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'generated', 'openapi.json'), 'utf8'));
const keys = JSON.parse(process.env.TRS_KEYS || '{}');
const BASE = '/api/v2';

/** Operations the server implements (all 22 of the document). */
const IMPLEMENTED = new Set([
  'listCategories',
  'verifyKey',
  'checkIpPublic',
  'checkIp',
  'reportIp',
  'bulkCheckIps',
  'bulkReportIps',
  'listReports',
  'searchIpsPublic',
  'getPublicStats',
  'getStatistics',
  'getAttackMapData',
  'listBlacklistCategories',
  'getBlacklistStats',
  'getTrends',
  'getBlacklist',
  'getBlacklistDetailed',
  'getBlacklistCombined',
  'exportBlacklistGit',
  'getRelayQuota',
  'sendRelayMail',
  'sendRelaySms',
]);

/** The least role that may call each key operation (from the access table of the document). */
const ROLE_FOR = {
  checkIp: 'free',
  reportIp: 'free',
  verifyKey: 'free',
  getBlacklist: 'contributor',
  listReports: 'professional',
  getTrends: 'professional',
  bulkCheckIps: 'professional',
  bulkReportIps: 'enterprise',
  getRelayQuota: 'professional',
  sendRelayMail: 'professional',
  sendRelaySms: 'professional',
  getBlacklistDetailed: 'contributor',
  getBlacklistCombined: 'contributor',
  exportBlacklistGit: 'contributor',
};
/** A role that lacks the feature, for staging 403. */
const ROLE_WITHOUT = {
  getBlacklist: 'free',
  listReports: 'contributor',
  getTrends: 'contributor',
  bulkCheckIps: 'contributor',
  bulkReportIps: 'business',
  getRelayQuota: 'free',
  sendRelayMail: 'free',
  sendRelaySms: 'contributor',
  getBlacklistDetailed: 'free',
  getBlacklistCombined: 'free',
  exportBlacklistGit: 'free',
};

function resolve(node, seen = new Set()) {
  if (Array.isArray(node)) return node.map((n) => resolve(n, seen));
  if (!node || typeof node !== 'object') return node;
  if (typeof node.$ref === 'string') {
    if (seen.has(node.$ref)) return {};
    const target = node.$ref
      .slice(2)
      .split('/')
      .reduce((obj, part) => obj[part.replace(/~1/g, '/').replace(/~0/g, '~')], document);
    return resolve(target, new Set([...seen, node.$ref]));
  }
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    // Keywords the validator behind Dredd does not know; the server validates them itself.
    if (k === 'examples' || k === 'example' || k === 'deprecated' || (k === 'format' && v === 'ip')) continue;
    out[k] = resolve(v, seen);
  }
  return out;
}

function operationOf(transaction) {
  const method = transaction.request.method.toLowerCase();
  const template = transaction.origin.resourceName;
  const item = document.paths[template];
  return item && item[method];
}

const FORMATS = { 'application/json': 'json', 'text/plain': 'txt', 'text/csv': 'csv' };

function setFormat(transaction, format) {
  transaction.fullPath = transaction.fullPath.replace(/([?&]format=)[^&]*/, `$1${format}`);
  transaction.request.uri = transaction.request.uri.replace(/([?&]format=)[^&]*/, `$1${format}`);
}

function setKey(transaction, key) {
  if (key) transaction.request.headers['X-Key'] = key;
}

function addQuery(transaction, query) {
  const sep = transaction.fullPath.includes('?') ? '&' : '?';
  transaction.fullPath += sep + query;
  transaction.request.uri += sep + query;
}

hooks.beforeEach((transaction) => {
  const operation = operationOf(transaction);
  if (!operation) {
    transaction.skip = true;
    return;
  }
  const id = operation.operationId;
  const status = String(transaction.expected.statusCode);
  transaction.fullPath = BASE + transaction.fullPath;
  transaction.request.uri = BASE + transaction.request.uri;
  if (!IMPLEMENTED.has(id)) {
    transaction.skip = true;
    return;
  }
  const needsKey = id in ROLE_FOR;
  switch (status) {
    case '200': {
      if (needsKey) setKey(transaction, keys[ROLE_FOR[id]]);
      // One transaction per documented media type: ask for that format, skip pairs Dredd invents.
      const expectedType = String(transaction.expected.headers['Content-Type'] || '').split(';')[0];
      if (!(operation.responses['200'].content || {})[expectedType]) {
        transaction.skip = true;
        return;
      }
      if (FORMATS[expectedType] && /[?&]format=/.test(transaction.fullPath) && id !== 'exportBlacklistGit') {
        setFormat(transaction, FORMATS[expectedType]);
      }
      break;
    }
    case '400':
      if (needsKey) setKey(transaction, keys[ROLE_FOR[id]]);
      addQuery(transaction, 'unknown_parameter=1');
      break;
    case '401':
      setKey(transaction, 'trs_' + 'x'.repeat(43));
      break;
    case '403':
      if (!ROLE_WITHOUT[id]) transaction.skip = true;
      else setKey(transaction, keys[ROLE_WITHOUT[id]]);
      break;
    default:
      transaction.skip = true;
      return;
  }
  const response = operation.responses[status];
  const media = response && resolve(response).content;
  const expectedType = String(transaction.expected.headers['Content-Type'] || '').split(';')[0];
  const json = media && media['application/json'];
  if (expectedType === 'application/json' && json && json.schema) {
    transaction.expected.bodySchema = json.schema;
  } else {
    // Text and CSV lists: the body depends on the data; status and headers are checked.
    delete transaction.expected.body;
    delete transaction.expected.bodySchema;
  }
});

hooks.beforeEachValidation((transaction) => {
  const headers = transaction.real.headers;
  if (headers['content-type']) headers['content-type'] = headers['content-type'].replace(/;\s*charset=utf-8/i, '');
  // The IETF draft fields are left out for unlimited quotas (documented on the headers).
  if (headers['x-ratelimit-limit'] === '-1') {
    for (const name of Object.keys(transaction.expected.headers || {})) {
      if (/^ratelimit(-policy)?$/i.test(name)) delete transaction.expected.headers[name];
    }
  }
});
