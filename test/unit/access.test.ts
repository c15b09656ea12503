import { describe, expect, it } from 'vitest';
import { accessRules } from '../../src/http/access.js';
import { hasFeature } from '../../src/roles.js';
import { loadApiArtifacts, type ApiDocument } from '../../src/openapi.js';

const { document } = loadApiArtifacts();
const withOperation = (operation: Record<string, unknown>) =>
  ({ openapi: '3.1.0', info: { title: 't', version: '1' }, 'x-access': { answers: 'envelope' }, paths: { '/x': { get: { operationId: 'checkIp', ...operation } } } }) as unknown as ApiDocument;

describe('access rules from the document', () => {
  it('gives every operation of the contract a rule', () => {
    const rules = accessRules(document);
    const ids = Object.values(document.paths ?? {}).flatMap((item) =>
      Object.values(item as Record<string, { operationId?: string }>).flatMap((op) => (op?.operationId ? [op.operationId] : [])),
    );
    expect(Object.keys(rules).sort()).toEqual([...ids].sort());
  });

  it('reads features, counters and answers as the server acts on them', () => {
    const rules = accessRules(document);
    expect(rules.checkIpPublic).toMatchObject({ feature: undefined, chargeWithKey: 'check', chargeWithoutKey: 'public', countsSite: true });
    expect(rules.bulkCheckIps).toMatchObject({ feature: 'bulk_check', chargeWithKey: 'check', chargedByHandler: true });
    expect(rules.sendRelaySms).toMatchObject({ feature: 'relay', relay: true, countsSite: false });
    expect(rules.verifyKey).toMatchObject({ feature: 'verify', countsSite: false });
    expect(rules.getStatistics).toMatchObject({ gatedByPublicLimit: true, chargeWithKey: undefined });
    // Metered in the statement that reads the answer: the checks (charged) and the lists (headers only).
    expect(rules.checkIp).toMatchObject({ chargeWithKey: 'check', meteredWithRead: true, chargedByHandler: false });
    expect(rules.getBlacklist).toMatchObject({ chargeWithKey: undefined, meteredWithRead: true });
    expect(rules.bulkCheckIps!.meteredWithRead).toBe(false);
    // Honeypot keys report in bulk but have no relay; Business has the audit trail.
    expect(hasFeature('honeypot', rules.bulkReportIps!.feature!)).toBe(true);
    expect(hasFeature('honeypot', rules.sendRelayMail!.feature!)).toBe(false);
  });

  it("gives each operation its document's error shape unless it names its own, and refuses a document that names none", () => {
    expect(accessRules(withOperation({ 'x-access': {} })).checkIp!.answers).toBe('envelope');
    expect(accessRules(withOperation({ 'x-access': { answers: 'relay' } })).checkIp!).toMatchObject({ answers: 'relay', relay: true });
    const abuseipdb = { ...withOperation({ 'x-access': {} }), 'x-access': { answers: 'abuseipdb' } } as unknown as ApiDocument;
    expect(accessRules(abuseipdb).checkIp!.answers).toBe('abuseipdb');
    expect(() => accessRules(withOperation({ 'x-access': { answers: 'html' } }))).toThrow(/checkIp: x-access.answers must be one of envelope, relay, crowdsec, abuseipdb/);
    const unnamed = { ...withOperation({ 'x-access': {} }), 'x-access': undefined } as unknown as ApiDocument;
    expect(() => accessRules(unnamed)).toThrow(/must name its error shape/);
  });

  it('refuses a malformed or missing rule, naming the operation', () => {
    expect(() => accessRules(withOperation({}))).toThrow(/checkIp: x-access must be an object/);
    expect(() => accessRules(withOperation({ 'x-access': { feature: 'admin' } }))).toThrow(/checkIp: x-access.feature must be one of/);
    expect(() => accessRules(withOperation({ 'x-access': { role: 'free' } }))).toThrow(/x-access.role is not a known field/);
    expect(() => accessRules(withOperation({ 'x-access': { feature: 'check' }, 'x-charge': { withKey: 'checks' } }))).toThrow(/x-charge.withKey must be one of check, report, feedback/);
    expect(() => accessRules(withOperation({ 'x-access': { feature: 'check' }, 'x-charge': { withoutKey: 'public' } }))).toThrow(/a keyed operation charges no public allowance/);
    expect(() => accessRules(withOperation({ 'x-access': {}, 'x-charge': { units: 'handler' } }))).toThrow(/x-charge.units without a counter/);
    expect(() => accessRules(withOperation({ 'x-access': {}, 'x-charge': { withRead: 'yes' } }))).toThrow(/x-charge.withRead must be true or false/);
    expect(() => accessRules(withOperation({ 'x-access': { feature: 'check' }, 'x-charge': { withKey: 'check', units: 'handler', withRead: true } }))).toThrow(
      /x-charge.withRead with units: handler/,
    );
  });
});
