/*
 * Dredd hooks, for each document the server answers (TRS_DREDD_DOCUMENT: `openapi`, the API;
 * `crowdsec` or `abuseipdb`, the other protocols; `internal`, the inbound webhooks). Dredd reads OpenAPI 3 only in part, so these hooks:
 * - prefix every request with the document's base (/api/v2, …), which Dredd does not take from `servers`;
 * - send the key of a suitable role (Dredd ignores security schemes);
 * - stage the error cases they can stage (400, 401, 403) and skip the others, and skip the
 *   operations this server does not implement yet;
 * - give Dredd the real JSON Schema of each response body from the document (by itself it only
 *   compares keys), and strip the charset it would otherwise compare exactly.
 */
const fs = require('node:fs');
const path = require('node:path');
const hooks = require('hooks');

const DOCUMENT = process.env.TRS_DREDD_DOCUMENT || 'openapi';
const document = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'generated', `${DOCUMENT}.json`), 'utf8'));
const keys = JSON.parse(process.env.TRS_KEYS || '{}');
const BASE = { openapi: '/api/v2', crowdsec: '/crowdsec/v1', abuseipdb: '/abuseipdb/api/v2', internal: '/webhooks' }[DOCUMENT];
/** Where each protocol's clients send their key. */
const KEY_HEADER = { openapi: 'X-Key', crowdsec: 'X-Api-Key', abuseipdb: 'Key' }[DOCUMENT];

/**
 * For each key operation, the least role that may call it and, where there is one, a role that
 * may not (to stage 403): run-dredd.ts works them out from the operations' `x-access` and the
 * role table, as the server does, so that no table of roles is written here again. CrowdSec's
 * operations take a bouncer's key (run-dredd.ts makes one), and refuse an unknown one with 403.
 */
const ACCESS = JSON.parse(process.env.TRS_ACCESS || '{}');
const BOUNCER_OPERATIONS = ['getDecisionsStream', 'getDecisions'];
const ROLE_FOR = {
  ...Object.fromEntries(Object.entries(ACCESS).filter(([, a]) => a.leastRole).map(([id, a]) => [id, a.leastRole])),
  ...Object.fromEntries(BOUNCER_OPERATIONS.map((id) => [id, 'bouncer'])),
};
const ROLE_WITHOUT = {
  ...Object.fromEntries(Object.entries(ACCESS).filter(([, a]) => a.roleWithout).map(([id, a]) => [id, a.roleWithout])),
  ...Object.fromEntries(BOUNCER_OPERATIONS.map((id) => [id, 'bouncer_unknown'])),
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
  if (key) transaction.request.headers[KEY_HEADER] = key;
}

function addQuery(transaction, query) {
  const sep = transaction.fullPath.includes('?') ? '&' : '?';
  transaction.fullPath += sep + query;
  transaction.request.uri += sep + query;
}

/** PHP-style form encoding (`name[0]=…`, `name[key]=…`), as the form clients send bodies. */
function formEncode(data) {
  const pairs = [];
  const walk = (prefix, value) => {
    if (value === null || value === undefined) return;
    if (Array.isArray(value)) value.forEach((v, i) => walk(`${prefix}[${i}]`, v));
    else if (typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(`${prefix}[${k}]`, v);
    else pairs.push(`${encodeURIComponent(prefix)}=${encodeURIComponent(String(value))}`);
  };
  for (const [k, v] of Object.entries(data)) walk(k, v);
  return pairs.join('&');
}

/** Dredd sends form requests without a body: the hook sends the media type's first example. */
function fillFormBody(transaction, operation) {
  if (!/x-www-form-urlencoded/.test(transaction.request.headers['Content-Type'] || '')) return;
  const media = resolveRefsOnly(operation.requestBody).content['application/x-www-form-urlencoded'];
  const example = Object.values(media.examples || {})[0];
  transaction.request.body = formEncode(resolveRefsOnly(example).value);
}

function resolveRefsOnly(node) {
  if (node && typeof node.$ref === 'string') {
    return resolveRefsOnly(node.$ref.slice(2).split('/').reduce((obj, part) => obj[part.replace(/~1/g, '/')], document));
  }
  return node;
}

function skip(transaction, why) {
  transaction.skip = true;
  transaction.skipReason = why;
}

function setQuery(transaction, name, value) {
  const re = new RegExp(`([?&]${name}=)[^&]*`);
  const encoded = encodeURIComponent(value);
  if (re.test(transaction.fullPath)) {
    transaction.fullPath = transaction.fullPath.replace(re, `$1${encoded}`);
    transaction.request.uri = transaction.request.uri.replace(re, `$1${encoded}`);
  } else addQuery(transaction, `${name}=${encoded}`);
}

function removeQuery(transaction, name) {
  const re = new RegExp(`([?&])${name}=[^&]*&?`);
  for (const field of ['fullPath', 'uri']) {
    const key = field === 'uri' ? 'request' : null;
    const value = key ? transaction.request.uri : transaction.fullPath;
    const next = value.replace(re, '$1').replace(/[?&]$/, '');
    if (key) transaction.request.uri = next;
    else transaction.fullPath = next;
  }
}

function setPath(transaction, from, to) {
  transaction.fullPath = transaction.fullPath.replace(`/${from}`, `/${to}`);
  transaction.request.uri = transaction.request.uri.replace(`/${from}`, `/${to}`);
}

function setBody(transaction, body) {
  const form = /x-www-form-urlencoded/.test(transaction.request.headers['Content-Type'] || '');
  transaction.request.body = form ? formEncode(body) : JSON.stringify(body);
}

/** Keyed envelope operations that count the site a request names (X-Rip-Site). */
const DOMAIN_LIMITED = new Set(['checkIpPublic', 'getPublicStats', 'searchIpsPublic', 'listCategories', 'getAttackMapData', 'getStatistics', 'listBlacklistCategories', 'getBlacklistStats', 'checkIp', 'checkBlock', 'checkAsn', 'reportIp', 'saveNotificationConfig']);

/** A well-formed request each operation refuses with 422. */
const UNPROCESSABLE = {
  reportIp: (t) => setBody(t, { ip: '10.0.0.1', categories: '18' }),
  submitWhitelistFeedback: (t) => setBody(t, { ipAddress: '10.0.0.1' }),
  saveNotificationConfig: (t) => setBody(t, { site_url: 'https://shop.example.com', recipients: ['a@example.com, b@example.com'] }),
  sendRelayMail: (t) => setBody(t, { recipient: 'user@example.com', subject: 'No body' }),
  sendRelaySms: (t) => setBody(t, { recipient_phone: '+8613800138000', template_code: '2fa_code', template_vars: { code: '123456', expiry_min: 5 } }),
  getBlacklist: (t) => setQuery(t, 'category', '999'),
  checkBlock: (t) => setQuery(t, 'network', '45.0.0.0/8'),
  getBlacklistDetailed: (t) => setQuery(t, 'category', '999'),
  getBlacklistCombined: (t) => setQuery(t, 'category', '999'),
  exportBlacklistGit: (t) => setQuery(t, 'category', '999'),
  getTrends: (t) => setQuery(t, 'category', '999'),
  abuseipdbCheck: (t) => setQuery(t, 'maxAgeInDays', '400'),
  abuseipdbReport: (t) => setBody(t, { ip: '10.0.0.1', categories: '18' }),
  abuseipdbBlacklist: (t) => setQuery(t, 'confidenceMinimum', '5'),
  abuseipdbBulkReport: (t) => setMultipart(t, ''),
  abuseipdbCheckBlock: (t) => setQuery(t, 'network', '45.0.0.0/8'),
  abuseipdbClearAddress: (t) => setQuery(t, 'ipAddress', 'nope'),
  createDelistRequest: (t) => setBody(t, { ip: '10.0.0.1', email: 'owner@example.com', reason: 'Private.' }),
};

/** A multipart body with the CSV file of a bulk report (Dredd sends no body for multipart operations). */
function setMultipart(transaction, csv) {
  const boundary = 'trs-dredd-boundary';
  transaction.request.headers['Content-Type'] = `multipart/form-data; boundary=${boundary}`;
  transaction.request.body = csv === ''
    ? `--${boundary}--\r\n`
    : `--${boundary}\r\nContent-Disposition: form-data; name="csv"; filename="report.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}\r\n--${boundary}--\r\n`;
}
const BULK_CSV = 'IP,Categories,ReportDate,Comment\r\n45.155.205.201,"18,22",,contract test\r\n203.0.foo.1,18,,refused';

/** A caller whose daily counter is used up (seeded by run-dredd.ts). */
const exhaustedAddress = (t) => {
  delete t.request.headers['X-Key'];
  t.request.headers['X-Forwarded-For'] = '198.51.100.99';
};
const TOO_MANY = {
  checkIpPublic: exhaustedAddress,
  getPublicStats: exhaustedAddress,
  searchIpsPublic: exhaustedAddress,
  listCategories: exhaustedAddress,
  getAttackMapData: exhaustedAddress,
  getStatistics: exhaustedAddress,
  createDelistRequest: exhaustedAddress,
  getDelistRequest: exhaustedAddress,
  checkIp: (t) => setKey(t, keys.free_exhausted),
  checkBlock: (t) => setKey(t, keys.free_exhausted),
  checkAsn: (t) => setKey(t, keys.free_exhausted),
  abuseipdbCheck: (t) => setKey(t, keys.free_exhausted),
  abuseipdbReport: (t) => setKey(t, keys.free_exhausted),
  abuseipdbCheckBlock: (t) => setKey(t, keys.free_exhausted),
  reportIp: (t) => setKey(t, keys.free_exhausted),
  submitWhitelistFeedback: (t) => setKey(t, keys.contributor_exhausted),
  bulkCheckIps: (t) => setKey(t, keys.professional_exhausted),
  // A key already used for as many sites as its role takes today, sending for a new one.
  sendRelayMail: (t) => {
    setKey(t, keys.professional_sites_full);
    setBody(t, { recipient: 'user@example.com', subject: 'Code', body_text: '123456', site_url: 'https://eleventh-site.example' });
  },
  sendRelaySms: (t) => {
    setKey(t, keys.professional_sites_full);
    setBody(t, { recipient_phone: '+4915112345678', template_code: '2fa_code', template_vars: { code: '123456', expiry_min: 5 }, site_url: 'https://eleventh-site.example' });
  },
};

hooks.beforeEach((transaction) => {
  const operation = operationOf(transaction);
  if (!operation) return skip(transaction, 'not an operation of the document');
  const id = operation.operationId;
  const status = String(transaction.expected.statusCode);
  transaction.fullPath = BASE + transaction.fullPath;
  transaction.request.uri = BASE + transaction.request.uri;
  if (DOCUMENT === 'internal') {
    if (stageWebhook(transaction, id, status) === false) return;
    return expectBody(transaction, operation, status);
  }
  const needsKey = id in ROLE_FOR;
  fillFormBody(transaction, operation);
  // Dredd sends every parameter's example: `since` would ask for a delta from a list never made.
  if (id === 'getBlacklist') removeQuery(transaction, 'since');
  // A MISP event is named by its manifest: the async hook below puts one in the path.
  if (id === 'getMispEvent' && (status === '200' || status === '304')) transaction.needsMispEvent = true;
  // The STIX bundle's media type carries its version parameter.
  if (id === 'getStixFeed' && status === '200') transaction.expected.headers['Content-Type'] = 'application/stix+json;version=2.1';
  if (id === 'abuseipdbBulkReport') setMultipart(transaction, BULK_CSV);
  // A delisting request seeded by run-dredd.ts (`keys.delist_request`: its id and its token).
  if (id === 'getDelistRequest' && status === '200') {
    const [requestId, token] = keys.delist_request.split(':');
    setPath(transaction, '0d7c5f3e-8a41-4c0e-9a51-3f1b2c7d9e10', requestId);
    setQuery(transaction, 'token', token);
  }
  switch (status) {
    case '202':
      // The example names a documentation address, which is never listed: ask for a public one.
      if (id !== 'createDelistRequest') return skip(transaction, 'no 202 to stage');
      setBody(transaction, { ip: '45.155.205.25', email: 'postmaster@example.com', reason: 'Contract test.' });
      break;
    case '201':
      // A subscription to a public address literal (the example's host is not resolved in the run).
      if (id !== 'createWebhook') return skip(transaction, 'no 201 to stage');
      setKey(transaction, keys[ROLE_FOR[id]]);
      setBody(transaction, { url: 'https://8.8.8.8/contract-hook', events: ['address.listed'] });
      break;
    case '204':
      return skip(transaction, 'no subscription with the example id to delete (test/integration/webhooks.test.ts deletes)');
    case '200': {
      // A test event needs a subscription and a receiver that answers: test/integration/webhooks.test.ts.
      if (id === 'testWebhook') return skip(transaction, 'no subscription with the example id to test');
      // An operation that answers 202 has no 200: this is its `default` (server error) response, which Dredd runs as a 200.
      if (!operation.responses['200']) return skip(transaction, 'the default response of an operation without a 200');
      if (needsKey) setKey(transaction, keys[ROLE_FOR[id]]);
      // One transaction per documented media type: ask for that format, skip pairs Dredd invents.
      const expectedType = String(transaction.expected.headers['Content-Type'] || '').split(';')[0];
      if (!(operation.responses['200'].content || {})[expectedType]) return skip(transaction, 'a media type pair Dredd invents');
      if (FORMATS[expectedType] && /[?&]format=/.test(transaction.fullPath) && id !== 'exportBlacklistGit') {
        setFormat(transaction, FORMATS[expectedType]);
      }
      // AbuseIPDB's list is text with `plaintext`, JSON without it.
      if (id === 'abuseipdbBlacklist' && expectedType === 'application/json') removeQuery(transaction, 'plaintext');
      break;
    }
    case '400':
      if (needsKey) setKey(transaction, keys[ROLE_FOR[id]]);
      // AbuseIPDB refuses a bad parameter with 422: its 400 is a body it cannot read.
      if (id === 'abuseipdbReport') {
        transaction.request.headers['Content-Type'] = 'application/json';
        transaction.request.body = '{"ip": ';
      } else if (id === 'abuseipdbBulkReport') return skip(transaction, 'a malformed multipart body is refused before its operation is known');
      else addQuery(transaction, 'unknown_parameter=1');
      break;
    case '401':
      setKey(transaction, 'trs_' + 'x'.repeat(43));
      break;
    case '403':
      if (ROLE_WITHOUT[id]) setKey(transaction, keys[ROLE_WITHOUT[id]]);
      else if (DOMAIN_LIMITED.has(id)) {
        // A key already used from its one site today, named from another: domain_limit_exceeded.
        setKey(transaction, keys.free_one_site);
        transaction.request.headers['X-Rip-Site'] = 'https://second-site.example';
      } else return skip(transaction, 'no role lacks this feature');
      break;
    case '404':
      setKey(transaction, keys[ROLE_FOR[id]]);
      if (id === 'getNotificationConfig') setQuery(transaction, 'site_url', 'https://never-saved.example');
      else if (id === 'getRuleset') setPath(transaction, 'scan_paths', 'tor_exits'); // not published
      else if (id === 'getDelistRequest') break; // the example's id names no request
      else if (id === 'getMispEvent') break; // the example's uuid names no event of this server
      else if (id === 'deleteWebhook' || id === 'testWebhook') break; // nor does the webhooks' example id
      else return skip(transaction, 'no 404 to stage');
      break;
    case '413':
      if (needsKey) setKey(transaction, keys[ROLE_FOR[id]]);
      transaction.request.body = JSON.stringify({ padding: 'x'.repeat(3.2 * 1024 * 1024) });
      transaction.request.headers['Content-Type'] = 'application/json';
      break;
    case '415':
      if (needsKey) setKey(transaction, keys[ROLE_FOR[id]]);
      transaction.request.headers['Content-Type'] = 'text/plain';
      // An operation without a body refuses one only in an encoding it cannot read.
      if (id === 'testWebhook') {
        transaction.request.headers['Content-Type'] = 'application/json; charset=latin1';
        transaction.request.body = '{}';
      }
      break;
    case '422': {
      if (needsKey) setKey(transaction, keys[ROLE_FOR[id]]);
      const refused = UNPROCESSABLE[id];
      if (!refused) return skip(transaction, 'no 422 to stage');
      refused(transaction);
      break;
    }
    case '410':
      // A list no longer kept (or never made): `since` names a tag of no kept snapshot.
      if (needsKey) setKey(transaction, keys[ROLE_FOR[id]]);
      if (id !== 'getBlacklist') return skip(transaction, 'no 410 to stage');
      setQuery(transaction, 'since', '"bl-0000000000000000"');
      break;
    case '402':
      // A Professional account whose inclusive quota is used up and that holds no bundle.
      setKey(transaction, keys.professional_capped);
      break;
    case '304':
      // The ETag is fetched by the async hook below and sent back in If-None-Match.
      if (needsKey) setKey(transaction, keys[ROLE_FOR[id]]);
      transaction.needsEtag = true;
      break;
    case '429': {
      const staged = TOO_MANY[id];
      if (!staged) return skip(transaction, 'only the server-error budget answers 429 here; it cannot be staged without server errors');
      staged(transaction);
      break;
    }
    default:
      return skip(transaction, `no ${status} to stage`);
  }
  expectBody(transaction, operation, status);
});

/** Dredd checks the body against the document's own JSON Schema of the response. */
function expectBody(transaction, operation, status) {
  const response = operation.responses[status];
  const media = response && resolve(response).content;
  const expectedType = String(transaction.expected.headers['Content-Type'] || '').split(';')[0];
  const json = media && media[expectedType];
  if (/^application\/([a-z.-]+\+)?json$/.test(expectedType) && json && json.schema) {
    transaction.expected.bodySchema = json.schema;
  } else {
    // Text and CSV lists: the body depends on the data; status and headers are checked.
    delete transaction.expected.body;
    delete transaction.expected.bodySchema;
  }
}

/**
 * The inbound webhooks (openapi/internal/): the contract run's server has a payment webhook
 * secret (TRS_WEBHOOK: it and an account that may hold bundles), no Stripe and no SMS provider
 * that posts receipts. Returns false when the transaction is skipped.
 */
const WEBHOOK = JSON.parse(process.env.TRS_WEBHOOK || '{}');
function signPayment(transaction, event) {
  const raw = JSON.stringify(event);
  const t = Math.floor(Date.now() / 1000);
  const mac = require('node:crypto').createHmac('sha256', WEBHOOK.secret).update(`${t}.${raw}`).digest('hex');
  transaction.request.headers['Content-Type'] = 'application/json';
  transaction.request.headers['X-Signature'] = `t=${t},v1=${mac}`;
  transaction.request.body = raw;
}
function stageWebhook(transaction, id, status) {
  const event = (bundle, n) => ({ id: `evt_dredd_${n}_${Date.now()}`, type: 'bundle.purchased', data: { account_id: WEBHOOK.accountId, bundle_id: bundle } });
  const stripeEvent = { id: 'evt_dredd', object: 'event', type: 'checkout.session.completed' };
  switch (`${id} ${status}`) {
    case 'receivePaymentEvent 200':
      return signPayment(transaction, event('svc_mail_bundle_1000', 200));
    case 'receivePaymentEvent 422':
      return signPayment(transaction, event('svc_no_such_bundle', 422));
    case 'receivePaymentEvent 401':
      transaction.request.body = JSON.stringify(event('svc_mail_bundle_1000', 401));
      delete transaction.request.headers['X-Signature'];
      return;
    case 'receivePaymentEvent 400':
    case 'receiveStripeEvent 400':
      transaction.request.headers['Content-Type'] = 'application/json';
      transaction.request.body = '{}';
      return;
    case 'receiveStripeEvent 404':
      transaction.request.headers['Content-Type'] = 'application/json';
      transaction.request.body = JSON.stringify(stripeEvent);
      return;
    case 'receiveSmsReceipt 400':
    case 'receiveSmsReceiptQuery 400':
      transaction.request.headers['Content-Type'] = 'application/x-www-form-urlencoded';
      transaction.request.body = id === 'receiveSmsReceipt' ? 'MessageSid=SM1&MessageStatus=delivered' : '';
      return setPath(transaction, 'sms/twilio', 'sms/twilio-2');
    case 'receiveSmsReceipt 404':
    case 'receiveSmsReceiptQuery 404':
      if (id === 'receiveSmsReceipt') {
        transaction.request.headers['Content-Type'] = 'application/x-www-form-urlencoded';
        transaction.request.body = 'MessageSid=SM1&MessageStatus=delivered';
      }
      return;
    case 'receivePaymentEvent 413':
    case 'receiveStripeEvent 413':
    case 'receiveSmsReceipt 413':
      transaction.request.body = JSON.stringify({ padding: 'x'.repeat(300 * 1024) });
      transaction.request.headers['Content-Type'] = 'application/json';
      return;
    case 'receivePaymentEvent 415':
    case 'receiveStripeEvent 415':
    case 'receiveSmsReceipt 415':
      transaction.request.headers['Content-Type'] = 'text/plain';
      transaction.request.body = 'not a webhook body';
      return;
  }
  skip(transaction, status === '200' ? 'no Stripe or SMS receipts configured in the contract run' : `no ${status} to stage`);
  return false;
}

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

/** GET /notification-config reads what a POST stored: store the example first. */
hooks.beforeEach((transaction, done) => {
  const operation = operationOf(transaction);
  if (transaction.skip || !operation || operation.operationId !== 'getNotificationConfig' || String(transaction.expected.statusCode) !== '200') return done();
  const example = resolveRefsOnly(Object.values(resolveRefsOnly(document.paths['/notification-config'].post.requestBody).content['application/json'].examples)[0]).value;
  fetch(`http://${transaction.host}:${transaction.port}${BASE}/notification-config`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'X-Key': keys[ROLE_FOR.getNotificationConfig] },
    body: JSON.stringify(example),
  }).then(() => done(), done);
});

/** A MISP event of the seeded list: the first its manifest names, in place of the example's uuid. */
hooks.beforeEach((transaction, done) => {
  if (transaction.skip || !transaction.needsMispEvent) return done();
  fetch(`http://${transaction.host}:${transaction.port}${BASE}/feeds/misp/manifest.json`, { headers: { [KEY_HEADER]: transaction.request.headers[KEY_HEADER] || '' } })
    .then((res) => res.json())
    .then((manifest) => {
      const uuid = Object.keys(manifest)[0];
      if (!uuid) return skip(transaction, 'the seeded list holds no event');
      setPath(transaction, '1f6b1c0e-5a43-5c3d-9b7e-3d1f0c8a2e41', uuid); // the document's example
    })
    .then(() => done(), done);
});

/** A 304 needs the current ETag: fetch the resource as the transaction will, then send it back. */
hooks.beforeEach((transaction, done) => {
  if (transaction.skip || !transaction.needsEtag) return done();
  fetch(`http://${transaction.host}:${transaction.port}${transaction.fullPath}`, { headers: { [KEY_HEADER]: transaction.request.headers[KEY_HEADER] || '' } })
    .then((res) => {
      transaction.request.headers['If-None-Match'] = res.headers.get('etag') || '';
      return res.arrayBuffer();
    })
    .then(() => done(), done);
});

/** Every skipped transaction with its reason, for the run's summary. */
hooks.afterEach((transaction, done) => {
  if (transaction.skip) console.log(`contract: skipped ${transaction.request.method} ${transaction.origin.resourceName} ${transaction.expected.statusCode}: ${transaction.skipReason || 'skipped'}`);
  done();
});
